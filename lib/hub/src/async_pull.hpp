// Asynchronous pulls (private header): PullHandle::State, shared by a handle and the worker thread
// that runs the pull, and AsyncPulls, the HubCore's set of those threads (joined on close or
// destruction: no worker outlives its hub).
#pragma once

#include <atomic>
#include <condition_variable>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

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

class AsyncPulls {
 public:
  AsyncPulls() = default;
  ~AsyncPulls() { cancel_all(); }
  AsyncPulls(const AsyncPulls&) = delete;
  AsyncPulls& operator=(const AsyncPulls&) = delete;

  // Runs `body` on a new worker thread; `body` must end by calling state->finish(). Joins the
  // threads of pulls that already ended first.
  void start(std::shared_ptr<PullHandle::State> state, std::function<void()> body);
  // Cancels every pull and joins every worker (noexcept: close, abandon, destruction).
  void cancel_all() noexcept;

 private:
  struct Worker {
    std::shared_ptr<PullHandle::State> state;
    std::thread thread;
  };
  std::mutex mu_;
  std::vector<Worker> workers_;
};

}  // namespace tensorhub
