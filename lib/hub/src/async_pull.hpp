// Asynchronous pulls (private header): PullHandle::State, shared by a handle and the worker thread
// that runs the pull, and AsyncPulls, the HubCore's set of those threads (async_jobs.hpp).
#pragma once

#include <atomic>
#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>

#include "async_jobs.hpp"
#include "tensorhub/hub.hpp"

namespace tensorhub {

class PullHandle::State {
 public:
  std::atomic<bool> cancel{false};
  std::atomic<std::uint64_t> done{0};
  std::atomic<std::uint64_t> total{0};

  // The worker's last word: the result or the error; wakes every waiter.
  void finish(std::optional<PullResult> result, std::exception_ptr error);
  bool ready() const;
  bool wait(std::chrono::milliseconds timeout) const;
  void wait() const;
  PullResult result() const;
  // The error the pull ended with (null if none); waits for the end.
  std::exception_ptr error() const;

 private:
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  bool finished_ = false;
  std::optional<PullResult> result_;
  std::exception_ptr error_;
};

using AsyncPulls = AsyncJobs<PullHandle::State>;

}  // namespace tensorhub
