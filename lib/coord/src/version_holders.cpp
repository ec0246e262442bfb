// VersionState: its holders, the reads and pulls pinning them, seeds, retention and what a
// worker that goes leaves behind (design: version_state.hpp).
#include <algorithm>
#include <string>
#include <utility>

#include "tensorhub/coord/version_state.hpp"
#include "tensorhub/core/error.hpp"

namespace tensorhub::coord {
namespace {

struct Marked {
  std::uint32_t fresh;    // chunks the holder did not have
  std::uint32_t revived;  // of those, chunks no live holder had (live count was 0)
};

// Sets have[0..n) to 1 and, when `counts` is 1, adds each fresh chunk to its live count.
Marked mark_run(std::uint8_t* __restrict__ have, std::uint32_t* __restrict__ live, std::uint32_t n,
                std::uint32_t counts) {
  std::uint32_t fresh = 0;
  std::uint32_t revived = 0;
  for (std::uint32_t i = 0; i < n; ++i) {
    const auto add = static_cast<std::uint32_t>(have[i] == 0);
    fresh += add;
    revived += add & counts & static_cast<std::uint32_t>(live[i] == 0);
    live[i] += add & counts;
    have[i] = 1;
  }
  return {fresh, revived};
}

}  // namespace

const Holder* VersionState::find_holder(WorkerId worker) const {
  const auto it = holders_.find(worker);
  return it == holders_.end() ? nullptr : &it->second;
}

Holder& VersionState::holder_or_throw(WorkerId worker, const char* what) {
  const auto it = holders_.find(worker);
  if (it == holders_.end()) {
    throw UserError(std::string(what) + ": worker " + std::to_string(worker) + " holds no reference to '" + model_ +
                    "' v" + std::to_string(version_));
  }
  return it->second;
}

void VersionState::add_relay(WorkerId reader, std::vector<std::string> regions, std::string progress) {
  if (regions.size() != manifest_->tensors.size()) throw UserError("relay offer: one region slot per tensor");
  Holder h;
  h.worker = reader;
  h.depth = 1;
  h.regions = std::move(regions);
  h.progress = std::move(progress);
  h.have.assign(manifest_->chunks.size(), 0);
  if (const auto old = holders_.find(reader); old != holders_.end()) count_holder(old->second, false);
  holders_.insert_or_assign(reader, std::move(h));
  withdrawn_ids_.erase(reader);
}

void VersionState::merge_relay(WorkerId reader, const std::vector<std::string>& regions, const std::string& progress) {
  if (regions.size() != manifest_->tensors.size()) throw UserError("relay offer: one region slot per tensor");
  auto& h = holder_or_throw(reader, "relay offer");
  if (!progress.empty()) h.progress = progress;
  for (std::size_t t = 0; t < regions.size(); ++t) {
    if (h.regions[t].empty()) h.regions[t] = regions[t];
  }
}

void VersionState::mark_held(WorkerId reader, std::uint32_t c) {
  const auto it = holders_.find(reader);
  if (it == holders_.end()) throw UserError("complete: relay chunks reported without a relay offer");
  auto& h = it->second;
  if (c >= h.have.size()) throw UserError("complete: chunk id out of range");
  if (!h.have[c]) {
    h.have[c] = 1;
    ++h.chunks_held;
    gain(h, c);
  }
}

void VersionState::mark_held_range(WorkerId reader, ChunkRange r) {
  const auto it = holders_.find(reader);
  if (it == holders_.end()) throw UserError("complete: relay chunks reported without a relay offer");
  auto& h = it->second;
  if (std::uint64_t{r.first} + r.count > h.have.size()) throw UserError("complete: held range out of range");
  // A plan-based reader reports every chunk of the version in a few ranges: R x chunks marks per
  // version, so this is the coordinator's inner loop (branch-free, vectorised: mark_run).
  const auto [fresh, revived] =
      mark_run(h.have.data() + r.first, live_.data() + r.first, r.count, h.withdrawn ? 0u : 1u);
  h.chunks_held += fresh;
  missing_ -= revived;
}

void VersionState::note_source_depth(WorkerId reader, std::uint32_t source_depth) {
  const auto it = holders_.find(reader);
  if (it != holders_.end()) it->second.depth = std::max(it->second.depth, source_depth + 1);
}

void VersionState::withdraw(WorkerId worker, std::uint64_t ticket) {
  auto& h = holder_or_throw(worker, "withdraw");
  h.withdraw_deferred = false;
  if (h.withdrawn) return;
  count_holder(h, false);
  h.withdrawn = true;
  h.withdrawn_ticket = ticket;
  withdrawn_ids_.insert(worker);
}

void VersionState::defer_withdrawal(WorkerId worker) {
  auto& h = holder_or_throw(worker, "withdraw");
  if (!h.withdrawn) h.withdraw_deferred = true;
}

void VersionState::erase_holder(WorkerId worker) {
  if (const auto it = holders_.find(worker); it != holders_.end()) {
    count_holder(it->second, false);
    holders_.erase(it);
  }
  withdrawn_ids_.erase(worker);
  plans_.forget_holder(worker);
}

bool VersionState::rejoin_origin(const PublishRequest& r) {
  if (!committed_ || holders_.count(r.worker) > 0) return false;
  if ((!group_.empty() && r.group.name != group_) || r.group.size != manifest_->num_shards ||
      r.chunk_bytes != manifest_->chunk_bytes || r.shard.shard != r.group.rank ||
      r.regions.size() != r.shard.tensors.size() || r.shard.checksums.size() != r.shard.tensors.size()) {
    return false;
  }
  std::size_t in_shard = 0;
  std::uint32_t shard_chunk = 0;  // a chunk of this shard
  for (const auto& e : manifest_->tensors) {
    if (e.shard != r.group.rank) continue;
    ++in_shard;
    shard_chunk = e.first_chunk;
  }
  if (in_shard != r.shard.tensors.size() || in_shard == 0) return false;
  // Only an origin that is gone is replaced: while one serves this shard, a second is refused.
  for (const auto& [id, other] : holders_) {
    if (other.origin && !other.withdrawn && other.have[shard_chunk]) return false;
  }
  Holder h;
  h.worker = r.worker;
  h.origin = true;
  h.regions.resize(manifest_->tensors.size());
  h.have.assign(manifest_->chunks.size(), 0);
  for (std::size_t i = 0; i < r.shard.tensors.size(); ++i) {
    const auto t = manifest_->find(r.shard.tensors[i].name);
    if (!t) return false;
    const auto& e = manifest_->tensors[*t];
    if (e.shard != r.group.rank || e.spec != r.shard.tensors[i] || r.shard.checksums[i].size() != e.num_chunks) {
      return false;
    }
    for (std::uint32_t c = 0; c < e.num_chunks; ++c) {
      if (manifest_->chunks[e.first_chunk + c].checksum != r.shard.checksums[i][c]) return false;
    }
    if (r.regions[i].empty()) return false;
    h.regions[*t] = r.regions[i];
    for (std::uint32_t c = 0; c < e.num_chunks; ++c) h.have[e.first_chunk + c] = 1;
    h.chunks_held += e.num_chunks;
  }
  count_holder(h, true);
  holders_.emplace(r.worker, std::move(h));
  return true;
}

void VersionState::pin_read(WorkerId holder, WorkerId reader) {
  auto& h = holder_or_throw(holder, "read");
  ++h.pins;
  ++h.pinned_by[reader];
}

bool VersionState::unpin_read(WorkerId holder, WorkerId reader) {
  const auto it = holders_.find(holder);
  if (it == holders_.end()) return false;
  auto& h = it->second;
  const auto pin = h.pinned_by.find(reader);
  if (pin == h.pinned_by.end()) return false;
  --h.pins;
  if (--pin->second == 0) h.pinned_by.erase(pin);
  return true;
}

void VersionState::start_pull(WorkerId reader, std::uint64_t ticket) { reader_tickets_[reader] = ticket; }

void VersionState::end_pull(WorkerId reader) {
  reader_tickets_.erase(reader);
  still_wanted_.erase(reader);
  for (const auto holder : plans_.release_reader(reader)) unpin_read(holder, reader);
}

bool VersionState::release_plan_source(WorkerId reader, WorkerId holder) {
  if (!plans_.release_source(reader, holder)) return false;
  unpin_read(holder, reader);
  return true;
}

bool VersionState::may_serve(const Holder& h, WorkerId reader) const {
  if (!h.withdrawn) return true;
  const auto t = reader_tickets_.find(reader);
  return t != reader_tickets_.end() && t->second < h.withdrawn_ticket;
}

std::uint32_t VersionState::pulls_before_withdrawal(const Holder& h) const {
  if (!h.withdrawn) return 0;
  std::uint32_t n = 0;
  for (const auto& [reader, ticket] : reader_tickets_) n += reader != h.worker && ticket < h.withdrawn_ticket ? 1 : 0;
  return n;
}

void VersionState::set_still_wanted(WorkerId reader, std::vector<std::uint32_t> chunks) {
  still_wanted_[reader] = std::move(chunks);
}

const std::vector<std::uint32_t>& VersionState::still_wanted(WorkerId reader) const {
  static const std::vector<std::uint32_t> kNone;
  const auto w = still_wanted_.find(reader);
  return w == still_wanted_.end() ? kNone : w->second;
}

bool VersionState::has_or_relays_any(const Holder& h, std::span<const std::uint32_t> chunks) const {
  const bool relay = !h.origin && !h.withdrawn;
  for (const auto c : chunks) {
    if (c >= h.have.size()) continue;
    if (h.have[c] || (relay && !h.regions[manifest_->chunks[c].tensor].empty())) return true;
  }
  return false;
}

void VersionState::drop_seed(WorkerId reader) {
  std::erase_if(wan_seeds_, [reader](const auto& s) { return s.second == reader; });
}

void VersionState::unpin_group() {
  if (group_pins_ > 0) --group_pins_;
}

void VersionState::release() {
  if (retained_ == 0) throw UserError("'" + model_ + "' v" + std::to_string(version_) + " is not retained");
  --retained_;
}

void VersionState::attach_snapshot(std::string path) {
  snapshot_ = std::move(path);
  offload_lease_ = 0;
}

std::uint32_t VersionState::pins_of(WorkerId reader) const {
  std::uint32_t n = 0;
  for (const auto& [hid, h] : holders_) {
    if (const auto p = h.pinned_by.find(reader); p != h.pinned_by.end()) n += p->second;
  }
  return n;
}

VersionState::Forgotten VersionState::forget_worker(WorkerId id, bool keep_reference, std::uint64_t ticket) {
  Forgotten out;
  out.pending = drop_pending(id);
  if (holders_.count(id)) {
    out.reference = true;
    if (keep_reference) {
      withdraw(id, ticket);  // reads already assigned to it drain
    } else {
      count_holder(holders_.at(id), false);
      holders_.erase(id);
      withdrawn_ids_.erase(id);
    }
  }
  for (auto& [hid, h] : holders_) {
    const auto p = h.pinned_by.find(id);
    if (p == h.pinned_by.end()) continue;
    h.pins -= std::min(h.pins, p->second);
    out.pins += p->second;
    h.pinned_by.erase(p);
  }
  if (offload_lease_ == id) offload_lease_ = 0;
  end_pull(id);
  plans_.forget_worker(id);  // its pins went above; as a planned parent it is gone

  drop_seed(id);
  std::erase_if(failed_pairs_, [id](const auto& p) { return p.first == id || p.second == id; });
  return out;
}

}  // namespace tensorhub::coord
