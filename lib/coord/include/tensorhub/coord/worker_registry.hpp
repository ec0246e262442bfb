// The coordinator's workers: who is registered (and how to reach it), their leases (liveness.hpp)
// and the recent history of those that died or left. Pure bookkeeping with the caller's clock;
// the Coordinator serialises access and decides what a worker that goes leaves behind.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "tensorhub/coord/liveness.hpp"
#include "tensorhub/coord/types.hpp"

namespace tensorhub::coord {

class WorkerRegistry {
 public:
  using Clock = std::chrono::steady_clock;

  // Ids carry `incarnation` (0 = random) in their high bits (CoordinatorConfig::incarnation).
  WorkerRegistry(std::chrono::milliseconds lease, std::uint32_t incarnation);

  std::chrono::milliseconds lease() const { return liveness_.lease(); }
  WorkerId add(const WorkerInfo& info, Clock::time_point now);
  // The registered worker `id` (UnknownWorker if not).
  const WorkerInfo& get(WorkerId id) const;
  bool registered(WorkerId id) const { return workers_.count(id) > 0; }
  // Workers registered now.
  std::size_t size() const { return workers_.size(); }
  // get(id), renewing its lease.
  const WorkerInfo& touch(WorkerId id, Clock::time_point now);
  // Renews the lease of `id` if it is registered.
  void touch_if_known(WorkerId id, Clock::time_point now) { liveness_.touch(id, now); }
  void report_failure(WorkerId id, Clock::time_point now, std::string why) {
    liveness_.report_failure(id, now, std::move(why));
  }
  bool suspect(WorkerId id, Clock::time_point now) const { return liveness_.suspect(id, now); }
  // Workers whose lease expired, with why.
  std::vector<std::pair<WorkerId, std::string>> expired(Clock::time_point now) const;
  // `id` goes (kDead or kLeft): remembered in the departed history, then unregistered.
  void remove(WorkerId id, WorkerState state, std::string reason, Clock::time_point now);
  const std::map<WorkerId, WorkerInfo>& directory() const { return workers_; }
  // A registered worker on `where`'s host (same dc, rack, host) has a GPU g with g mod n == rail
  // (rail-aware plans: is the host's GPU of a rail there to wait for?). O(GPUs of that host).
  bool host_has_rail(const WorkerInfo& where, std::uint32_t rail, std::uint32_t n) const;
  // Registered workers with their liveness, then the recent departures (newest first).
  std::vector<WorkerStatus> statuses(Clock::time_point now) const;

 private:
  struct Departed {
    WorkerStatus status;
    Clock::time_point when;
  };

  WorkerId next_;
  std::map<WorkerId, WorkerInfo> workers_;
  std::map<std::string, std::map<std::int32_t, std::uint32_t>> gpus_;  // host key -> GPU -> workers
  Liveness liveness_;
  std::deque<Departed> departed_;  // the last kMaxDeparted workers that died or left
};

}  // namespace tensorhub::coord
