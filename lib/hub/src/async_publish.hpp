// Asynchronous publishes (private header): PublishHandle::State, shared by a handle, the worker
// thread that hashes and commits the shard, and an unpublish() that cancels it; AsyncPublishes,
// the HubCore's set of those threads (async_jobs.hpp).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <optional>

#include "async_jobs.hpp"
#include "tensorhub/hub.hpp"

namespace tensorhub {

class PublishHandle::State {
 public:
  std::atomic<bool> cancel{false};

  // The worker is done reading the tensors (hashed, failed or cancelled); wakes waiters.
  void hashed();
  // Waits until hashed() (or finish()) was called.
  void wait_hashed() const;
  // The worker's last word: the result or the error; wakes every waiter.
  void finish(std::optional<PublishResult> result, std::exception_ptr error);
  bool ready() const;
  bool wait(std::chrono::milliseconds timeout) const;
  PublishResult result() const;
  // The error the publish ended with (null if none); waits for the end.
  std::exception_ptr error() const;

 private:
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  bool hashed_ = false;
  bool finished_ = false;
  std::optional<PublishResult> result_;
  std::exception_ptr error_;
};

using AsyncPublishes = AsyncJobs<PublishHandle::State>;

}  // namespace tensorhub
