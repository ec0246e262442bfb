// Drives a worker while its owner computes: over TCP a holder's memory is read only while the
// holder's worker progresses (the get is served by an active message on the holder side).
// Sleeps on the worker's event fd (ucp_worker_arm + poll) when idle, so an idle holder costs no
// CPU; without an event fd it polls every kFallbackPeriod.
#pragma once

#include <chrono>
#include <mutex>
#include <thread>

#include "worker.hpp"

namespace tensorhub::transport::ucx {

class ProgressThread {
 public:
  // `mutex` guards `worker`; both must outlive this object.
  ProgressThread(Worker& worker, std::mutex& mutex);
  ~ProgressThread();  // stops and joins
  ProgressThread(const ProgressThread&) = delete;
  ProgressThread& operator=(const ProgressThread&) = delete;

  static constexpr std::chrono::microseconds kFallbackPeriod{200};
  // Upper bound on one sleep even with an event fd (belt and braces against a missed wake-up).
  static constexpr int kMaxSleepMs = 100;

 private:
  void run(const std::stop_token& stop);

  Worker& worker_;
  std::mutex& mutex_;
  std::jthread thread_;  // last: started once the members above exist
};

}  // namespace tensorhub::transport::ucx
