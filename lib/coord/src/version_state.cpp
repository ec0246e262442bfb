#include "tensorhub/coord/version_state.hpp"

#include <algorithm>
#include <cstdint>
#include <utility>

#include "tensorhub/core/error.hpp"

namespace tensorhub::coord {

VersionState::VersionState(std::string model, std::uint64_t version, std::string group, std::uint32_t group_size,
                           std::uint64_t chunk_bytes)
    : model_(std::move(model)),
      version_(version),
      group_(std::move(group)),
      group_size_(group_size),
      chunk_bytes_(chunk_bytes) {}

VersionState::VersionState(Manifest manifest, std::string snapshot)
    : model_(manifest.model),
      version_(manifest.version),
      group_size_(manifest.num_shards),
      chunk_bytes_(manifest.chunk_bytes),
      committed_(true),
      manifest_(std::make_shared<const Manifest>(std::move(manifest))),
      retained_(1),
      snapshot_(std::move(snapshot)),
      live_(manifest_->chunks.size(), 0),
      missing_(static_cast<std::uint32_t>(manifest_->chunks.size())) {}

bool VersionState::add_shard(const PublishRequest& r) {
  const std::string what = model_ + " v" + std::to_string(version_);
  if (committed_ && rejoin_origin(r)) return false;
  if (committed_ || pending_.count(r.group.rank)) {
    throw UserError(what + " shard " + std::to_string(r.group.rank) +
                    " is already published; versions are immutable (publish a new version number)");
  }
  if (r.group.name != group_ || r.group.size != group_size_) {
    throw UserError(what + " is being published by group '" + group_ + "' of " + std::to_string(group_size_) +
                    " ranks, not by '" + r.group.name + "' of " + std::to_string(r.group.size));
  }
  if (r.chunk_bytes != chunk_bytes_) throw UserError(what + ": shards disagree on the chunk size");
  if (r.group.rank >= r.group.size) throw UserError(what + ": shard index out of range");
  if (r.shard.shard != r.group.rank) throw UserError(what + ": shard index does not match the group rank");
  validate_shard(r.shard, r.chunk_bytes);
  if (r.regions.size() != r.shard.tensors.size()) {
    throw UserError(what + ": one memory region per tensor is required");
  }
  for (const auto& [rank, p] : pending_) {
    if (p.worker == r.worker) throw UserError(what + ": this worker already published shard " + std::to_string(rank));
  }
  pending_.emplace(r.group.rank, PendingShard{r.worker, r.shard, r.regions});
  if (pending_.size() < group_size_) return false;
  try {
    commit();
  } catch (...) {
    pending_.erase(r.group.rank);  // e.g. a tensor name clashes with another shard's
    throw;
  }
  return true;
}

void VersionState::commit() {
  std::vector<ShardManifest> shards;
  for (const auto& [rank, p] : pending_) shards.push_back(p.shard);
  manifest_ = std::make_shared<const Manifest>(
      assemble_manifest(model_, version_, chunk_bytes_, std::move(shards)));  // throws on name clash
  live_.assign(manifest_->chunks.size(), 0);
  missing_ = static_cast<std::uint32_t>(manifest_->chunks.size());
  for (auto& [rank, p] : pending_) {
    Holder h;
    h.worker = p.worker;
    h.origin = true;
    h.regions.resize(manifest_->tensors.size());
    h.have.assign(manifest_->chunks.size(), 0);
    for (std::size_t i = 0; i < p.shard.tensors.size(); ++i) {
      const auto t = *manifest_->find(p.shard.tensors[i].name);
      h.regions[t] = p.regions[i];
      const auto& e = manifest_->tensors[t];
      for (std::uint32_t c = 0; c < e.num_chunks; ++c) h.have[e.first_chunk + c] = 1;
      h.chunks_held += e.num_chunks;
    }
    count_holder(h, true);
    holders_.emplace(p.worker, std::move(h));
  }
  pending_.clear();
  committed_ = true;
}

bool VersionState::drop_pending(WorkerId worker) {
  for (auto it = pending_.begin(); it != pending_.end(); ++it) {
    if (it->second.worker == worker) {
      pending_.erase(it);
      return true;
    }
  }
  return false;
}

bool VersionState::chunk_available(std::uint32_t c, WorkerId except) const {
  std::uint32_t n = c < live_.size() ? live_[c] : 0;
  if (except != 0 && n > 0) {
    const auto it = holders_.find(except);
    if (it != holders_.end() && !it->second.withdrawn && it->second.have[c]) --n;
  }
  return n > 0;
}

void VersionState::count_holder(const Holder& h, bool add) {
  if (h.withdrawn || h.have.size() != live_.size()) return;
  for (std::uint32_t c = 0; c < h.have.size(); ++c) {
    if (!h.have[c]) continue;
    if (add) {
      if (live_[c]++ == 0) --missing_;
    } else if (--live_[c] == 0) {
      ++missing_;
    }
  }
}

void VersionState::gain(const Holder& h, std::uint32_t c) {
  if (!h.withdrawn && live_[c]++ == 0) --missing_;
}

bool VersionState::readable() const {
  if (!committed_) return false;
  return !snapshot_.empty() || missing_ == 0;
}

bool VersionState::sole_holder_of_some_chunk(WorkerId worker) const {
  const auto it = holders_.find(worker);
  if (it == holders_.end()) return false;
  for (std::uint32_t c = 0; c < it->second.have.size(); ++c) {
    if (it->second.have[c] && !chunk_available(c, worker)) return true;
  }
  return false;
}

VersionStatus VersionState::status() const {
  VersionStatus s;
  s.version = version_;
  s.committed = committed_;
  s.readable = readable();
  s.retained = retained_;
  s.bytes = committed_ ? manifest_->total_bytes() : 0;
  s.pins = static_cast<std::uint32_t>(std::min<std::uint64_t>(group_pins_, UINT32_MAX));
  s.snapshot = snapshot_;
  if (committed_) {
    s.tensors = static_cast<std::uint32_t>(manifest_->tensors.size());
    for (const auto& e : manifest_->tensors) {
      if (!e.spec.sliced()) continue;
      const auto it = std::find_if(s.global_tensors.begin(), s.global_tensors.end(),
                                   [&](const GlobalTensorStatus& g) { return g.tensor.name == e.spec.global_name; });
      if (it != s.global_tensors.end()) {
        ++it->boxes;
        continue;
      }
      s.global_tensors.push_back(
          GlobalTensorStatus{TensorSpec(e.spec.global_name, e.spec.dtype, e.spec.global_shape), 1});
    }
  }
  for (const auto& [id, h] : holders_) {
    HolderStatus hs;
    hs.worker = id;
    hs.origin = h.origin;
    hs.withdrawn = h.withdrawn;
    hs.pins = h.pins;
    hs.chunks_held = h.chunks_held;
    hs.chunks_total = manifest_->chunks.size();
    s.holder_list.push_back(std::move(hs));
    if (h.withdrawn) continue;
    ++s.holders;
    if (h.origin) ++s.origin_holders;
    s.pins += h.pins;
  }
  return s;
}

}  // namespace tensorhub::coord
