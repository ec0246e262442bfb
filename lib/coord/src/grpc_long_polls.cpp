#include "grpc_long_polls.hpp"

#include <algorithm>
#include <utility>

namespace tensorhub::coord {
namespace {

using std::chrono::milliseconds;

// How often waiting calls are re-checked: every 2 ms with few waiters, up to every 20 ms with
// thousands (each check is one short coordinator lookup).
milliseconds interval_for(std::size_t waiters) {
  return std::clamp(milliseconds(static_cast<milliseconds::rep>(waiters / 64)), milliseconds(2), milliseconds(20));
}

}  // namespace

LongPolls::LongPolls(std::size_t max_waiters) : max_waiters_(max_waiters), thread_([this] { run(); }) {}

LongPolls::~LongPolls() { stop(); }

std::size_t LongPolls::waiting() const {
  std::lock_guard lock(mu_);
  return waiters_.size();
}

grpc::ServerUnaryReactor* LongPolls::start(grpc::CallbackServerContext* ctx, std::chrono::steady_clock::time_point end,
                                           Poll poll) {
  auto* reactor = ctx->DefaultReactor();
  if (auto done = poll(std::chrono::steady_clock::now() >= end)) {
    reactor->Finish(*done);
    return reactor;
  }
  std::lock_guard lock(mu_);
  if (stopping_) {
    reactor->Finish({grpc::StatusCode::UNAVAILABLE, "coordinator is shutting down"});
  } else if (waiters_.size() >= max_waiters_) {
    reactor->Finish({grpc::StatusCode::RESOURCE_EXHAUSTED,
                     "too many waiting calls (" + std::to_string(max_waiters_) + "); try again later"});
  } else {
    waiters_.push_back(Waiter{ctx, reactor, end, std::move(poll)});
    cv_.notify_one();
  }
  return reactor;
}

void LongPolls::stop() {
  {
    std::lock_guard lock(mu_);
    if (stopping_) return;
    stopping_ = true;
    cv_.notify_all();
  }
  if (thread_.joinable()) thread_.join();
}

void LongPolls::run() {
  std::unique_lock lock(mu_);
  for (;;) {
    cv_.wait_for(lock, interval_for(waiters_.size()), [&] { return stopping_ || !waiters_.empty(); });
    auto batch = std::move(waiters_);
    waiters_.clear();
    const bool stopping = stopping_;
    lock.unlock();
    std::vector<Waiter> keep;
    for (auto& w : batch) {
      if (stopping) {
        w.reactor->Finish({grpc::StatusCode::UNAVAILABLE, "coordinator is shutting down"});
        continue;
      }
      if (w.ctx->IsCancelled()) {
        w.reactor->Finish({grpc::StatusCode::CANCELLED, "call cancelled by the client"});
        continue;
      }
      if (auto done = w.poll(std::chrono::steady_clock::now() >= w.end)) {
        w.reactor->Finish(*done);
        continue;
      }
      keep.push_back(std::move(w));
    }
    lock.lock();
    if (stopping) {
      for (auto& w : waiters_) w.reactor->Finish({grpc::StatusCode::UNAVAILABLE, "coordinator is shutting down"});
      waiters_.clear();
      return;
    }
    for (auto& w : keep) waiters_.push_back(std::move(w));
    // Sleep a full interval unless stopping (new waiters were already polled once on arrival).
    cv_.wait_for(lock, interval_for(waiters_.size()), [&] { return stopping_; });
  }
}

}  // namespace tensorhub::coord
