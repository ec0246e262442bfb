// The hub's heartbeat thread: keeps this worker's lease at the coordinator (liveness.hpp) and
// notices when the coordinator no longer knows it (lease expired, a standby took over, a
// restart), so that the hub re-registers and re-publishes what it holds (soft state).
//
// Every interval (the coordinator's lease / 5, learnt from its replies) it calls
// heartbeat(self()). On UnknownWorker, or while `pending()` says something is left to restore,
// it calls `rebuild()`; rebuild returns false when it could not run now (the hub's API mutex was
// busy: the call in progress meets UnknownWorker itself) and is asked again next tick.
// Coordinator unreachable: logged once per outage, retried next tick. RAII: the destructor
// stops the thread promptly.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

#include "tensorhub/coord/client.hpp"
#include "tensorhub/core/log.hpp"

namespace tensorhub {

class HeartbeatThread {
 public:
  struct Hooks {
    std::function<coord::WorkerId()> self;
    std::function<bool()> pending;  // something still to restore after a rebuild
    std::function<bool()> rebuild;  // true if it ran
  };

  HeartbeatThread(coord::Client& client, Hooks hooks, Logger log);
  ~HeartbeatThread();
  HeartbeatThread(const HeartbeatThread&) = delete;
  HeartbeatThread& operator=(const HeartbeatThread&) = delete;

  // The worker's registration was lost (seen by the API thread); the next tick rebuilds.
  void registration_lost() { lost_.store(true); }
  bool lost() const { return lost_.load(); }
  void clear_lost() { lost_.store(false); }

 private:
  void run();
  void tick();

  coord::Client& client_;
  Hooks hooks_;
  Logger log_;
  std::atomic<bool> lost_{false};
  std::chrono::milliseconds interval_{1000};
  bool unreachable_ = false;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace tensorhub
