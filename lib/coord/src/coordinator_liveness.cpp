// Coordinator: worker leases (liveness.hpp), forgetting workers that die or leave, and the
// worker list.
#include <algorithm>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "tensorhub/coord/coordinator.hpp"
#include "tensorhub/core/error.hpp"

namespace tensorhub::coord {

std::chrono::milliseconds Coordinator::reap_tick() const {
  const auto lease = workers_.lease();
  if (lease.count() == 0) return std::chrono::milliseconds(1000);
  return std::clamp(lease / 4, std::chrono::milliseconds(10), std::chrono::milliseconds(1000));
}

HeartbeatReply Coordinator::heartbeat(WorkerId id) {
  std::lock_guard lock(mu_);
  reap();
  if (id != 0) alive(id);
  return HeartbeatReply{static_cast<std::uint64_t>(workers_.lease().count())};
}

void Coordinator::reap() {
  for (const auto& [id, why] : workers_.expired(now())) forget_worker(id, WorkerState::kDead, why);
}

void Coordinator::forget_worker(WorkerId id, WorkerState state, const std::string& reason) {
  if (!workers_.registered(id)) {
    workers_.remove(id, state, reason, now());  // drops a stale lease
    return;
  }
  const WorkerInfo info = workers_.get(id);
  // It is gone from here on: nothing below may assign to it, and its withdrawn references are
  // forgotten as soon as they drain (forget_departed_drained).
  workers_.remove(id, state, reason, now());
  slots_.forget_worker(id);
  // Its read pins, counted before the group finishes below release its plan sources.
  std::uint32_t pins = 0;
  for (auto& [model, versions] : directory_.all()) {
    for (auto& [n, v] : versions) pins += v.pins_of(id);
  }
  // Reading-group pulls it resolved and never finished: finished on its behalf, so that their
  // pins on the version do not keep the publishers' unpublish waiting. Pulls of its groups it
  // would still have joined: its share of their pins goes.
  const auto finished = groups_.active_in(id);
  for (const auto& key : finished) release_group_share(key, id);
  for (const auto& key : groups_.not_joined_by(id)) {
    groups_.join(key, id, false);
    release_group_share(key, id);
  }
  groups_.forget(id);

  std::uint32_t references = 0;
  std::vector<std::pair<std::string, std::uint64_t>> touched;
  std::set<std::string> pending_dropped;
  for (auto& [model, versions] : directory_.all()) {
    for (auto& [n, v] : versions) {
      const auto gone = v.forget_worker(id, state == WorkerState::kLeft, ++ticket_);
      if (gone.pending) pending_dropped.insert(model);
      references += gone.reference ? 1 : 0;
      touched.emplace_back(model, n);
    }
  }
  for (const auto& model : pending_dropped) apply_deferred_withdrawals(model);
  for (const auto& [model, n] : touched) forget_departed_drained(model, n);
  const bool dead = state == WorkerState::kDead;
  const std::string what = "worker " + std::to_string(id) + " (" + info.host + " rank " + std::to_string(info.rank) +
                           ") " + (dead ? "declared dead: " : "left: ") + reason + "; " +
                           (dead ? "removed " : "withdrew ") + std::to_string(references) + " reference(s), released " +
                           std::to_string(pins) + " pin(s) of its reads and " + std::to_string(finished.size()) +
                           " group read(s)";
  if (dead) {
    log_.warn(what);
  } else {
    log_.info(what);
  }
  changed_.notify_all();
}

std::vector<WorkerStatus> Coordinator::workers() {
  std::lock_guard lock(mu_);
  reap();
  return workers_.statuses(now());
}

}  // namespace tensorhub::coord
