// AsyncOutcome<R> (private header): how an asynchronous call of the hub ends, shared by its
// handle and the worker thread that runs it: the worker's last word (a result or an error) and
// the waits on it. PullHandle::State and PublishHandle::State are made of one.
#pragma once

#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <optional>
#include <utility>

namespace tensorhub {

template <class R>
class AsyncOutcome {
 public:
  // The worker's last word: the result or the error; wakes every waiter.
  void finish(std::optional<R> result, std::exception_ptr error) {
    {
      std::lock_guard lock(mu_);
      result_ = std::move(result);
      error_ = std::move(error);
      finished_ = true;
    }
    cv_.notify_all();
  }
  bool ready() const {
    std::lock_guard lock(mu_);
    return finished_;
  }
  bool wait(std::chrono::milliseconds timeout) const {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return finished_; });
  }
  void wait() const {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return finished_; });
  }
  // Waits for the end; the result, or the error rethrown.
  R result() const {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return finished_; });
    if (error_) std::rethrow_exception(error_);
    return *result_;
  }
  // The error the call ended with (null if none); waits for the end.
  std::exception_ptr error() const {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return finished_; });
    return error_;
  }

 private:
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  bool finished_ = false;
  std::optional<R> result_;
  std::exception_ptr error_;
};

}  // namespace tensorhub
