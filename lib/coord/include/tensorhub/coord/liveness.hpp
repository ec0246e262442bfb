// Worker leases: the coordinator's view of which workers are alive (soft state).
//
// Every call a worker makes renews its lease, and the hub sends heartbeats between calls
// (Client::heartbeat, every lease/5). Then:
//   alive    heard from within half the lease, and no read from it failed since;
//   suspect  silent for more than half the lease, or a reader reported a failed read from it
//            after it was last heard from: the coordinator assigns no new reads to it, so its
//            readers are served by other holders at once. A heartbeat clears the suspicion
//            (a live holder whose one reader had trouble is not punished for long);
//   expired  silent for a whole lease: the coordinator declares it dead and removes its
//            references, the pins of its own reads and its source slots (Coordinator::reap).
// A lease of 0 turns expiry and suspicion off: workers live until they deregister (for
// embedders that never send heartbeats). Pure bookkeeping with an injected clock; the
// Coordinator serialises access. Every coordinator call asks for the expired workers first, so
// the entries are also kept ordered by their last contact: expired() costs O(log R + expired),
// not O(R) (an O(R^2) share of a version's coordinator time at R = 1,024 readers otherwise).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "tensorhub/coord/types.hpp"

namespace tensorhub::coord {

class Liveness {
 public:
  using Clock = std::chrono::steady_clock;

  explicit Liveness(std::chrono::milliseconds lease);

  std::chrono::milliseconds lease() const { return lease_; }

  void add(WorkerId worker, Clock::time_point now);
  void remove(WorkerId worker);
  // Renews the lease of a known worker (unknown ones are ignored) and clears its suspicion.
  void touch(WorkerId worker, Clock::time_point now);
  // A reader's read from `worker` failed: suspect until it is heard from again.
  void report_failure(WorkerId worker, Clock::time_point now, std::string why);

  bool suspect(WorkerId worker, Clock::time_point now) const;
  // Why `worker` is suspect ("" if it is not).
  std::string suspicion(WorkerId worker, Clock::time_point now) const;
  std::uint64_t silent_ms(WorkerId worker, Clock::time_point now) const;
  // Workers whose lease has expired, oldest silence first.
  std::vector<WorkerId> expired(Clock::time_point now) const;

 private:
  struct Entry {
    Clock::time_point last_seen{};
    bool reported = false;  // a failed read was reported since last_seen
    std::string report;
  };

  std::chrono::milliseconds lease_;
  std::map<WorkerId, Entry> entries_;
  std::set<std::pair<Clock::time_point, WorkerId>> by_last_seen_;  // the same entries, oldest first
};

}  // namespace tensorhub::coord
