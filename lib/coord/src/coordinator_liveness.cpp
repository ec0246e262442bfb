// Coordinator: worker leases (liveness.hpp), declaring workers dead, and the worker list.
#include <algorithm>
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
    remove_dead(id, "lease expired: silent for " + std::to_string(liveness_.silent_ms(id, t)) + " ms (lease " +
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

void Coordinator::remove_dead(WorkerId id, const std::string& reason) {
  const auto w = workers_.find(id);
  if (w == workers_.end()) {
    liveness_.remove(id);
    return;
  }
  std::uint32_t references = 0;
  std::uint32_t pins = 0;
  std::vector<std::pair<std::string, std::uint64_t>> touched;
  for (auto& [model, versions] : models_) {
    for (auto& [n, v] : versions) {
      bool touch = v.drop_pending(id);
      if (v.holders().erase(id) > 0) {
        ++references;
        touch = true;
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
      if (touch) touched.emplace_back(model, n);
    }
  }
  // Reading groups it resolved and never finished: finish on its behalf, so that their pins on
  // the version do not keep the publishers' unpublish waiting.
  std::vector<GroupKey> groups;
  for (const auto& [key, g] : group_reads_) {
    if (g.active.count(id)) groups.push_back(key);
  }
  for (const auto& key : groups) finish_group_read(key, id);
  for (const auto& [model, n] : touched) {
    auto m = models_.find(model);
    if (m == models_.end()) continue;
    auto vit = m->second.find(n);
    if (vit == m->second.end()) continue;
    if (!vit->second.committed() && !vit->second.has_pending()) {
      m->second.erase(vit);
      if (m->second.empty()) models_.erase(m);
      continue;
    }
    drop_if_unused(model, n);
  }
  slots_.forget_worker(id);
  log_.warn("worker " + std::to_string(id) + " (" + w->second.host + " rank " + std::to_string(w->second.rank) +
            ") declared dead: " + reason + "; removed " + std::to_string(references) + " reference(s), " +
            std::to_string(pins) + " pin(s) of its reads, " + std::to_string(groups.size()) + " group read(s)");
  remember_departed(id, WorkerState::kDead, reason);
  liveness_.remove(id);
  workers_.erase(id);
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
