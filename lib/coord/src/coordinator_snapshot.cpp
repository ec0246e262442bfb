// Coordinator: snapshot file references and the offload lease (design: coordinator.hpp).
#include <algorithm>
#include <cstdio>
#include <set>
#include <string>

#include "tensorhub/coord/coordinator.hpp"
#include "tensorhub/core/error.hpp"
#include "tensorhub/core/manifest.hpp"
#include "vname.hpp"

namespace tensorhub::coord {
void Coordinator::attach_snapshot(const std::string& path, const Manifest& manifest) {
  if (path.empty()) throw UserError("attach_snapshot: empty snapshot path");
  validate_manifest(manifest);
  const auto what = vname(manifest.model, manifest.version);
  std::lock_guard lock(mu_);
  auto m = models_.find(manifest.model);
  if (m != models_.end()) {
    const auto vit = m->second.find(manifest.version);
    if (vit != m->second.end()) {
      auto& v = vit->second;
      if (!v.committed()) {
        throw UserError(what + " is not committed yet (shards missing); attach a snapshot after it commits");
      }
      const auto diff = manifest_difference(v.manifest(), manifest, "the version", "the snapshot");
      if (!diff.empty()) throw UserError("snapshot " + path + " does not match " + what + ": " + diff);
      if (!v.snapshot.empty() && v.snapshot != path) log_.info(what + ": snapshot " + v.snapshot + " replaced");
      v.snapshot = path;
      v.offload_lease = 0;
      log_.info(what + " is backed by snapshot " + path);
      changed_.notify_all();
      return;
    }
  }
  VersionState v(manifest);
  v.snapshot = path;
  v.retained = 1;  // recovered from a snapshot: kept until released
  models_[manifest.model].emplace(manifest.version, std::move(v));
  log_.info(what + " restored from snapshot " + path + " (no live holder; retained once)");
  changed_.notify_all();
}

bool Coordinator::lease_alive(const VersionState& v) const {
  if (v.offload_lease == 0 || workers_.count(v.offload_lease) == 0) return false;
  const auto h = v.holders().find(v.offload_lease);
  return h != v.holders().end() && !h->second.withdrawn;
}

OffloadLease Coordinator::begin_offload(WorkerId w, const std::string& model, std::uint64_t version) {
  std::lock_guard lock(mu_);
  reap();
  alive(w);
  auto& v = version_or_throw(model, version);
  const Holder* h = v.find_holder(w);
  if (!v.snapshot.empty() || v.retained == 0 || h == nullptr || h->withdrawn || !v.sole_holder_of_some_chunk(w)) {
    return OffloadLease{OffloadState::kDone, 0};
  }
  if (v.offload_lease != w && lease_alive(v)) return OffloadLease{OffloadState::kWait, v.offload_lease};
  if (v.offload_lease != 0 && v.offload_lease != w) {
    log_.warn(vname(model, version) + ": offload lease of worker " + std::to_string(v.offload_lease) +
              " is stale (it left); worker " + std::to_string(w) + " takes it over");
  }
  v.offload_lease = w;
  return OffloadLease{OffloadState::kWrite, w};
}

void Coordinator::end_offload(WorkerId w, const std::string& model, std::uint64_t version) {
  std::lock_guard lock(mu_);
  reap();
  liveness_.touch(w, now());
  const auto m = models_.find(model);
  if (m == models_.end()) return;
  const auto vit = m->second.find(version);
  if (vit == m->second.end() || vit->second.offload_lease != w) return;
  vit->second.offload_lease = 0;
  changed_.notify_all();
}

}  // namespace tensorhub::coord
