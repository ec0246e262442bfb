// Coordinator: snapshot file references and the offload lease (design: coordinator.hpp).
#include <algorithm>
#include <cstdio>
#include <set>
#include <string>

#include "tensorhub/coord/coordinator.hpp"
#include "tensorhub/core/error.hpp"
#include "tensorhub/core/validate.hpp"
#include "vname.hpp"

namespace tensorhub::coord {
namespace {

std::string hex(std::uint64_t x) {
  char buf[19];
  std::snprintf(buf, sizeof buf, "0x%016llx", static_cast<unsigned long long>(x));
  return buf;
}

// Structural checks of a manifest from a caller (attach_snapshot): every index in range and
// every tensor cut into chunks of chunk_bytes. Throws UserError.
void validate_manifest(const Manifest& m) {
  const std::string what = "snapshot manifest of " + vname(m.model, m.version);
  validate_name("model name", m.model);
  if (m.chunk_bytes == 0) throw UserError(what + ": chunk size is zero");
  if (m.num_shards == 0) throw UserError(what + ": zero shards");
  if (m.tensors.empty()) throw UserError(what + ": no tensors");
  std::set<std::string> names;
  std::uint64_t next_chunk = 0;
  for (std::uint32_t t = 0; t < m.tensors.size(); ++t) {
    const auto& e = m.tensors[t];
    validate_name("tensor name", e.spec.name);
    if (!names.insert(e.spec.name).second) {
      throw UserError(what + ": duplicate tensor name '" + e.spec.name + "'");
    }
    if (e.shard >= m.num_shards) throw UserError(what + ": tensor '" + e.spec.name + "' names a shard out of range");
    if (e.first_chunk != next_chunk || e.num_chunks != chunk_count(e.spec.bytes(), m.chunk_bytes)) {
      throw UserError(what + ": tensor '" + e.spec.name + "' has a bad chunk range");
    }
    for (std::uint32_t c = 0; c < e.num_chunks; ++c) {
      const auto i = e.first_chunk + c;
      if (i >= m.chunks.size()) throw UserError(what + ": tensor '" + e.spec.name + "' chunk range exceeds the list");
      const auto& ch = m.chunks[i];
      const auto offset = std::uint64_t{c} * m.chunk_bytes;
      if (ch.tensor != t || ch.offset != offset || ch.length != std::min(m.chunk_bytes, e.spec.bytes() - offset)) {
        throw UserError(what + ": tensor '" + e.spec.name + "' chunk " + std::to_string(c) + " is malformed");
      }
    }
    next_chunk += e.num_chunks;
  }
  if (next_chunk != m.chunks.size()) throw UserError(what + ": chunks that belong to no tensor");
}

// The first difference between a version's manifest and a snapshot's, or "" if they describe
// the same bytes (same tensors by name, dtype and shape, same chunking and checksums; the shard
// layout and tensor order may differ).
std::string manifest_difference(const Manifest& version, const Manifest& file) {
  if (version.tensors.size() != file.tensors.size()) {
    return "the version has " + std::to_string(version.tensors.size()) + " tensors, the snapshot " +
           std::to_string(file.tensors.size());
  }
  if (version.chunk_bytes != file.chunk_bytes) {
    return "chunk size " + std::to_string(version.chunk_bytes) + " in the version, " +
           std::to_string(file.chunk_bytes) + " in the snapshot";
  }
  for (const auto& e : version.tensors) {
    const auto idx = file.find(e.spec.name);
    if (!idx) return "tensor '" + e.spec.name + "' is missing from the snapshot";
    const auto& f = file.tensors[*idx];
    if (f.spec != e.spec) {
      return "tensor '" + e.spec.name + "' is " + describe(e.spec) + " in the version but " + describe(f.spec) +
             " in the snapshot";
    }
    if (f.num_chunks != e.num_chunks) return "tensor '" + e.spec.name + "' has a different number of chunks";
    for (std::uint32_t c = 0; c < e.num_chunks; ++c) {
      const auto& a = version.chunks[e.first_chunk + c];
      const auto& b = file.chunks[f.first_chunk + c];
      if (a.offset != b.offset || a.length != b.length) {
        return "tensor '" + e.spec.name + "' chunk " + std::to_string(c) + " covers different bytes";
      }
      if (a.checksum != b.checksum) {
        return "tensor '" + e.spec.name + "' chunk " + std::to_string(c) + ": checksum " + hex(a.checksum) +
               " in the version, " + hex(b.checksum) + " in the snapshot";
      }
    }
  }
  return "";
}

}  // namespace

void Coordinator::attach_snapshot(const std::string& path, const Manifest& manifest) {
  if (path.empty()) throw UserError("attach_snapshot: empty snapshot path");
  validate_manifest(manifest);
  const auto what = vname(manifest.model, manifest.version);
  std::lock_guard lock(mu_);
  if (VersionState* v = directory_.find(manifest.model, manifest.version)) {
    if (!v->committed()) {
      throw UserError(what + " is not committed yet (shards missing); attach a snapshot after it commits");
    }
    const auto diff = manifest_difference(v->manifest(), manifest);
    if (!diff.empty()) throw UserError("snapshot " + path + " does not match " + what + ": " + diff);
    if (!v->snapshot().empty() && v->snapshot() != path) log_.info(what + ": snapshot " + v->snapshot() + " replaced");
    v->attach_snapshot(path);
    log_.info(what + " is backed by snapshot " + path);
    changed_.notify_all();
    return;
  }
  directory_.add(VersionState(manifest, path));  // recovered from a snapshot: retained once, until released
  log_.info(what + " restored from snapshot " + path + " (no live holder; retained once)");
  changed_.notify_all();
}

bool Coordinator::lease_alive(const VersionState& v) const {
  if (v.offload_lease() == 0 || !workers_.registered(v.offload_lease())) return false;
  const Holder* h = v.find_holder(v.offload_lease());
  return h != nullptr && !h->withdrawn;
}

OffloadLease Coordinator::begin_offload(WorkerId w, const std::string& model, std::uint64_t version) {
  validate_name("model name", model);
  std::lock_guard lock(mu_);
  reap();
  alive(w);
  auto& v = directory_.get(model, version);
  const Holder* h = v.find_holder(w);
  if (!v.snapshot().empty() || v.retained() == 0 || h == nullptr || h->withdrawn || !v.sole_holder_of_some_chunk(w)) {
    return OffloadLease{OffloadState::kDone, 0};
  }
  if (v.offload_lease() != w && lease_alive(v)) return OffloadLease{OffloadState::kWait, v.offload_lease()};
  if (v.offload_lease() != 0 && v.offload_lease() != w) {
    log_.warn(vname(model, version) + ": offload lease of worker " + std::to_string(v.offload_lease()) +
              " is stale (it left); worker " + std::to_string(w) + " takes it over");
  }
  v.set_offload_lease(w);
  return OffloadLease{OffloadState::kWrite, w};
}

void Coordinator::end_offload(WorkerId w, const std::string& model, std::uint64_t version) {
  validate_name("model name", model);
  std::lock_guard lock(mu_);
  reap();
  workers_.touch_if_known(w, now());
  VersionState* v = directory_.find(model, version);
  if (v == nullptr || v->offload_lease() != w) return;
  v->set_offload_lease(0);
  changed_.notify_all();
}

}  // namespace tensorhub::coord
