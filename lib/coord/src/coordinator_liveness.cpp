// Coordinator: worker leases (liveness.hpp), declaring workers dead, and the worker list.
#include <algorithm>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "tensorhub/coord/coordinator.hpp"
#include "tensorhub/core/error.hpp"
#include "vname.hpp"
#include "wan_seed.hpp"

namespace tensorhub::coord {
namespace {

constexpr std::size_t kMaxDeparted = 64;

std::uint64_t ms_since(std::chrono::steady_clock::time_point then, std::chrono::steady_clock::time_point now) {
  return now > then
             ? static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(now - then).count())
             : 0;
}

}  // namespace

std::chrono::milliseconds Coordinator::reap_tick() const {
  const auto lease = liveness_.lease();
  if (lease.count() == 0) return std::chrono::milliseconds(1000);
  return std::clamp(lease / 4, std::chrono::milliseconds(10), std::chrono::milliseconds(1000));
}

HeartbeatReply Coordinator::heartbeat(WorkerId id) {
  std::lock_guard lock(mu_);
  reap();
  if (id != 0) alive(id);
  return HeartbeatReply{static_cast<std::uint64_t>(liveness_.lease().count())};
}

void Coordinator::reap() {
  const auto t = now();
  for (const auto id : liveness_.expired(t)) {
    forget_worker(id, WorkerState::kDead,
                  "lease expired: silent for " + std::to_string(liveness_.silent_ms(id, t)) + " ms (lease " +
                      std::to_string(liveness_.lease().count()) + " ms)");
  }
}

void Coordinator::remember_departed(WorkerId id, WorkerState state, std::string reason) {
  const auto w = workers_.find(id);
  WorkerStatus s;
  s.worker = id;
  if (w != workers_.end()) s.info = w->second;
  s.state = state;
  s.reason = std::move(reason);
  departed_.push_back(Departed{std::move(s), now()});
  while (departed_.size() > kMaxDeparted) departed_.pop_front();
}

void Coordinator::forget_worker(WorkerId id, WorkerState state, const std::string& reason) {
  const auto w = workers_.find(id);
  if (w == workers_.end()) {
    liveness_.remove(id);
    return;
  }
  const WorkerInfo info = w->second;
  // It is gone from here on: nothing below may assign to it, and its withdrawn references are
  // forgotten as soon as they drain (forget_departed_drained).
  remember_departed(id, state, reason);
  workers_.erase(w);
  liveness_.remove(id);
  slots_.forget_worker(id);
  // Reading groups it resolved and never finished: finish on its behalf, so that their pins on
  // the version do not keep the publishers' unpublish waiting. Pulls of its groups it would
  // still have joined: give up its share of their pins.
  std::vector<GroupKey> finished;
  std::vector<GroupKey> not_joined;
  for (const auto& [key, g] : group_reads_) {
    const auto& [model, group, seq] = key;
    if (g.active.count(id)) {
      finished.push_back(key);
      continue;
    }
    const auto member = group_pulls_.find(MemberKey{model, group, id});
    if (member != group_pulls_.end() && member->second < seq && g.joined < g.size) not_joined.push_back(key);
  }
  for (const auto& key : finished) release_group_share(key, id);
  for (const auto& key : not_joined) {
    ++group_reads_.at(key).joined;
    release_group_share(key, id);
  }
  std::erase_if(group_pulls_, [id](const auto& e) { return std::get<2>(e.first) == id; });

  std::uint32_t references = 0;
  std::uint32_t pins = 0;
  std::vector<std::pair<std::string, std::uint64_t>> touched;
  std::set<std::string> pending_dropped;
  for (auto& [model, versions] : models_) {
    for (auto& [n, v] : versions) {
      if (v.drop_pending(id)) pending_dropped.insert(model);
      if (Holder* h = v.find_holder(id)) {
        ++references;
        if (state == WorkerState::kLeft) {
          withdraw(*h, ++ticket_);  // reads already assigned to it drain
        } else {
          v.holders().erase(id);
        }
      }
      for (auto& [hid, h] : v.holders()) {
        const auto p = h.pinned_by.find(id);
        if (p == h.pinned_by.end()) continue;
        h.pins -= std::min(h.pins, p->second);
        pins += p->second;
        h.pinned_by.erase(p);
      }
      if (v.offload_lease == id) v.offload_lease = 0;
      v.still_wanted.erase(id);
      v.reader_tickets.erase(id);
      drop_seed(v, id);
      std::erase_if(v.failed_pairs, [id](const auto& p) { return p.first == id || p.second == id; });
      touched.emplace_back(model, n);
    }
  }
  for (const auto& model : pending_dropped) apply_deferred_withdrawals(model);
  for (const auto& [model, n] : touched) forget_departed_drained(model, n);
  const std::string what = "worker " + std::to_string(id) + " (" + info.host + " rank " + std::to_string(info.rank) +
                           ") " + (state == WorkerState::kDead ? "declared dead: " : "left: ") + reason + "; " +
                           (state == WorkerState::kDead ? "removed " : "withdrew ") + std::to_string(references) +
                           " reference(s), released " + std::to_string(pins) + " pin(s) of its reads and " +
                           std::to_string(finished.size()) + " group read(s)";
  if (state == WorkerState::kDead) {
    log_.warn(what);
  } else {
    log_.info(what);
  }
  changed_.notify_all();
}

std::vector<WorkerStatus> Coordinator::workers() {
  std::lock_guard lock(mu_);
  reap();
  const auto t = now();
  std::vector<WorkerStatus> out;
  for (const auto& [id, info] : workers_) {
    WorkerStatus s;
    s.worker = id;
    s.info = info;
    s.reason = liveness_.suspicion(id, t);
    s.state = s.reason.empty() ? WorkerState::kAlive : WorkerState::kSuspect;
    s.silent_ms = liveness_.silent_ms(id, t);
    out.push_back(std::move(s));
  }
  for (auto it = departed_.rbegin(); it != departed_.rend(); ++it) {
    auto s = it->status;
    s.silent_ms = ms_since(it->when, t);
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace tensorhub::coord
