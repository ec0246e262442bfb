// AsyncJobs (private header): the worker threads of a HubCore's asynchronous calls (pull_async,
// publish_async), one per call, joined on close or destruction: no worker outlives its hub.
// `State` has `std::atomic<bool> cancel` and `bool ready() const`.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace tensorhub {

template <class State>
class AsyncJobs {
 public:
  AsyncJobs() = default;
  ~AsyncJobs() { cancel_all(); }
  AsyncJobs(const AsyncJobs&) = delete;
  AsyncJobs& operator=(const AsyncJobs&) = delete;

  // Runs `body` on a new worker thread; `body` must end by making state->ready() true. Joins the
  // threads of jobs that already ended first.
  void start(std::shared_ptr<State> state, std::function<void()> body) {
    std::vector<std::thread> ended;
    {
      std::lock_guard lock(mu_);
      for (auto it = workers_.begin(); it != workers_.end();) {
        if (it->state->ready()) {
          ended.push_back(std::move(it->thread));
          it = workers_.erase(it);
        } else {
          ++it;
        }
      }
      workers_.push_back(Worker{std::move(state), std::thread(std::move(body))});
    }
    for (auto& t : ended) t.join();
  }

  // Cancels every job and joins every worker (noexcept: close, abandon, destruction).
  void cancel_all() noexcept {
    std::vector<Worker> all;
    {
      std::lock_guard lock(mu_);
      all.swap(workers_);
    }
    for (auto& w : all) w.state->cancel = true;
    for (auto& w : all) {
      if (w.thread.joinable()) w.thread.join();
    }
  }

 private:
  struct Worker {
    std::shared_ptr<State> state;
    std::thread thread;
  };
  std::mutex mu_;
  std::vector<Worker> workers_;
};

}  // namespace tensorhub
