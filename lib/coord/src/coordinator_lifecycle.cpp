// Coordinator: publishing, withdrawing and forgetting references (design: version_state.hpp,
// deferred withdrawal: coordinator.hpp).
#include <algorithm>
#include <string>
#include <vector>

#include "tensorhub/coord/coordinator.hpp"
#include "tensorhub/core/error.hpp"
#include "tensorhub/core/validate.hpp"
#include "vname.hpp"

namespace tensorhub::coord {

PublishReply Coordinator::publish(const PublishRequest& r) {
  validate_name("model name", r.model);
  validate_name("publishing group name", r.group.name);
  for (const auto& t : r.shard.tensors) validate_name("tensor name", t.name);
  if (r.group.size == 0 || r.group.size > kMaxGroupSize) {
    throw UserError("publish: a group has 1 to " + std::to_string(kMaxGroupSize) + " members, not " +
                    std::to_string(r.group.size));
  }
  std::lock_guard lock(mu_);
  reap();
  alive(r.worker);
  bool fresh = false;
  auto& v = directory_.find_or_create(r, fresh);
  try {
    const bool committed = v.add_shard(r);
    if (committed) {
      log_.info("committed " + vname(r.model, r.version) + " (" + std::to_string(r.group.size) + " shards)");
      apply_deferred_withdrawals(r.model);
      changed_.notify_all();
    }
    return PublishReply{committed};
  } catch (...) {
    if (fresh) directory_.erase(r.model, r.version);
    throw;
  }
}

std::uint32_t Coordinator::outstanding(const VersionState& v, const Holder& h) const {
  // Origins also wait for reading groups that resolved this version and have not finished:
  // those groups were promised the version. A withdrawn relay waits for the pulls that resolved
  // the version before it withdrew (it may still serve them: VersionState::may_serve).
  const std::uint64_t waits = h.origin ? v.group_pins() : v.pulls_before_withdrawal(h);
  const std::uint64_t n = std::uint64_t{h.pins} + waits + (h.withdraw_deferred ? 1 : 0);
  return static_cast<std::uint32_t>(std::min<std::uint64_t>(n, UINT32_MAX));
}

bool Coordinator::withdrawal_must_wait(const std::string& model, const VersionState& v, WorkerId worker) const {
  if (!v.snapshot().empty() || !v.sole_holder_of_some_chunk(worker)) return false;  // stays readable
  if (directory_.latest(model) != v.version()) return false;  // a newer version is readable already
  const auto& versions = directory_.versions(model);
  for (auto it = versions.upper_bound(v.version()); it != versions.end(); ++it) {
    if (!it->second.committed() && it->second.has_pending()) return true;
  }
  return false;
}

void Coordinator::apply_deferred_withdrawals(const std::string& model) {
  const auto m = directory_.all().find(model);
  if (m == directory_.all().end()) return;
  for (auto& [n, v] : m->second) {
    std::vector<WorkerId> deferred;
    for (const auto& [id, h] : v.holders()) {
      if (h.withdraw_deferred) deferred.push_back(id);
    }
    // One at a time: each withdrawal may make the version unreadable for the next.
    for (const auto id : deferred) {
      if (!withdrawal_must_wait(model, v, id)) v.withdraw(id, ++ticket_);
    }
  }
  changed_.notify_all();
}

std::uint32_t Coordinator::unpublish(WorkerId w, const std::string& model, std::uint64_t version) {
  validate_name("model name", model);
  std::lock_guard lock(mu_);
  reap();
  alive(w);
  auto& v = directory_.get(model, version);
  if (v.drop_pending(w)) {
    directory_.drop_if_unused(model, version);
    apply_deferred_withdrawals(model);  // withdrawals that waited for this version
    changed_.notify_all();
    return 0;
  }
  const Holder* h = v.find_holder(w);
  if (h == nullptr) throw NotFoundError(vname(model, version) + " is not published by this worker");
  if (!h->withdrawn && v.retained() > 0 && v.snapshot().empty() && v.sole_holder_of_some_chunk(w)) {
    throw OffloadRequired(vname(model, version) +
                          " is retained and this worker is the last holder of some of its chunks: it must be "
                          "offloaded to a snapshot before this reference goes (or released first)");
  }
  if (!h->withdrawn && !h->withdraw_deferred) {
    if (withdrawal_must_wait(model, v, w)) {
      v.defer_withdrawal(w);
      log_.info(vname(model, version) + ": withdrawal of worker " + std::to_string(w) +
                "'s reference waits until the newer pending version commits");
    } else {
      v.withdraw(w, ++ticket_);
    }
  }
  changed_.notify_all();
  return outstanding(v, *h);
}

void Coordinator::forget_if_drained(const std::string& model, std::uint64_t version, WorkerId w) {
  VersionState* v = directory_.find(model, version);
  if (v == nullptr) return;
  const Holder* h = v->find_holder(w);
  if (h == nullptr || !h->withdrawn || outstanding(*v, *h) > 0) return;
  v->erase_holder(w);
  directory_.drop_if_unused(model, version);
}

void Coordinator::forget_departed_drained(const std::string& model, std::uint64_t version) {
  VersionState* v = directory_.find(model, version);
  if (v == nullptr) return;
  std::vector<WorkerId> gone;
  for (const auto id : v->withdrawn_holders()) {
    const Holder* h = v->find_holder(id);
    if (h != nullptr && !workers_.registered(id) && outstanding(*v, *h) == 0) gone.push_back(id);
  }
  for (const auto id : gone) v->erase_holder(id);
  directory_.drop_if_unused(model, version);
}

std::uint32_t Coordinator::wait_drained(WorkerId w, const std::string& model, std::uint64_t version,
                                        std::chrono::milliseconds timeout) {
  validate_name("model name", model);
  std::unique_lock lock(mu_);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    reap();  // a reader that died holding pins releases them here
    alive(w);
    const VersionState* v = directory_.find(model, version);
    if (v == nullptr) return 0;
    const Holder* h = v->find_holder(w);
    if (h == nullptr) return 0;
    if (!h->withdrawn && !h->withdraw_deferred) {
      throw UserError("wait_drained on " + vname(model, version) + " before unpublish");
    }
    const auto left = outstanding(*v, *h);
    if (left == 0) {
      forget_if_drained(model, version, w);
      changed_.notify_all();
      return 0;
    }
    if (std::chrono::steady_clock::now() >= deadline) return left;
    changed_.wait_until(lock, std::min(deadline, std::chrono::steady_clock::now() + reap_tick()));
  }
}

}  // namespace tensorhub::coord
