// A standby coordinator's watch on its primary (`tensorhub serve --standby-of PRIMARY`).
//
// The standby runs its own, empty Coordinator but refuses every call (UNAVAILABLE, "standby")
// while the primary answers, so clients given "primary,standby" keep talking to the primary.
// A thread probes the primary (Heartbeat(0)) every `probe`; once the primary has not answered
// for `takeover_after`, the standby becomes active for good: it serves every call, and workers,
// whose calls to the dead primary fail, move to it, find themselves unknown (UnknownWorker),
// register again and re-publish what they hold. No state is copied: it is soft and comes back
// from the workers. A primary that restarts must come back as a standby of the new active one
// (`--standby-of`), or two coordinators would serve one hub.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "tensorhub/coord/auth.hpp"
#include "tensorhub/coord/client.hpp"
#include "tensorhub/core/log.hpp"

namespace tensorhub::coord {

struct StandbyOptions {
  std::string primary;                             // host:port of the primary coordinator
  std::chrono::milliseconds probe{200};            // probe interval (and each probe's deadline)
  std::chrono::milliseconds takeover_after{2000};  // primary silent this long -> take over
  ClientAuth auth{};                               // credentials for the probes (the hub's token)
};

class StandbyWatch {
 public:
  explicit StandbyWatch(StandbyOptions options);
  ~StandbyWatch();
  StandbyWatch(const StandbyWatch&) = delete;
  StandbyWatch& operator=(const StandbyWatch&) = delete;

  bool active() const { return active_.load(); }
  // For GrpcServerOptions::refuse: empty once active.
  std::string refusal() const;
  // Blocks until active or `timeout` passes; returns active().
  bool wait_active(std::chrono::milliseconds timeout);

 private:
  void run();

  StandbyOptions options_;
  std::unique_ptr<Client> primary_;
  Logger log_;
  std::atomic<bool> active_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace tensorhub::coord
