// Long polls without a thread each (private): WaitFor and WaitDrained are callback-API calls
// whose condition one poller thread re-checks, so a flood of waiters costs memory, not server
// threads, and heartbeats keep being served (issue 16 item 5). Thread-safe.
#pragma once

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

namespace tensorhub::coord {

class LongPolls {
 public:
  // Re-checks a waiter's condition (never blocks): a status finishes the call (its reply
  // filled), nullopt keeps it waiting. `last` is true once its deadline has passed: then it
  // must answer.
  using Poll = std::function<std::optional<grpc::Status>(bool last)>;

  // At most `max_waiters` waits at once; more are refused with RESOURCE_EXHAUSTED.
  explicit LongPolls(std::size_t max_waiters);
  ~LongPolls();  // stop()s
  LongPolls(const LongPolls&) = delete;
  LongPolls& operator=(const LongPolls&) = delete;

  // Polls once now; if that does not answer, keeps the call until it does, its deadline
  // (`end`) passes, the client cancels, or stop(). Returns the reactor to hand back to gRPC.
  grpc::ServerUnaryReactor* start(grpc::CallbackServerContext* ctx, std::chrono::steady_clock::time_point end,
                                  Poll poll);
  // Finishes every waiting call with UNAVAILABLE (and any later one at once); joins the poller.
  void stop();

  std::size_t waiting() const;

 private:
  struct Waiter {
    grpc::CallbackServerContext* ctx;
    grpc::ServerUnaryReactor* reactor;
    std::chrono::steady_clock::time_point end;
    Poll poll;
  };
  void run();

  std::size_t max_waiters_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Waiter> waiters_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace tensorhub::coord
