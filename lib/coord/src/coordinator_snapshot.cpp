// Coordinator: snapshot file references and the offload lease (design: coordinator.hpp).
#include <algorithm>
#include <string>

#include "tensorhub/coord/coordinator.hpp"
#include "tensorhub/core/error.hpp"
#include "tensorhub/core/manifest.hpp"
#include "tensorhub/core/validate.hpp"
#include "vname.hpp"

namespace tensorhub::coord {
void Coordinator::attach_snapshot(const std::string& path, const Manifest& manifest) {
  if (path.empty()) throw UserError("attach_snapshot: empty snapshot path");
  validate_manifest(manifest);
  const auto what = vname(manifest.model, manifest.version);
  std::lock_guard lock(mu_);
  if (VersionState* v = directory_.find(manifest.model, manifest.version)) {
    if (!v->committed()) {
      throw UserError(what + " is not committed yet (shards missing); attach a snapshot after it commits");
    }
    const auto diff = manifest_difference(v->manifest(), manifest, "the version", "the snapshot");
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
