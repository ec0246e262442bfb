// Emulated streams and events: work is queued and runs only when the stream, or an event
// recorded on it, is synchronized (or an event is queried, or another stream waits for it), in
// order. So code that reads a copy's destination before synchronizing sees stale bytes, as it
// would on a GPU, instead of passing by accident. The first failure of queued work is thrown
// by the next synchronize().
#pragma once

#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>

#include "tensorhub/device/device.hpp"

namespace tensorhub::device::emulated {

class Queue {
 public:
  void push(std::function<void()> op);
  std::uint64_t mark();                  // ticket of everything queued so far
  void run_until(std::uint64_t ticket);  // run queued work up to `ticket`, in order
  void rethrow();                        // the first stored failure, once

 private:
  std::mutex run_mu_;  // held while work runs: one runner at a time, in order
  std::mutex mu_;
  std::deque<std::function<void()>> ops_;
  std::uint64_t queued_ = 0;
  std::uint64_t done_ = 0;
  std::exception_ptr error_;
};

class StreamState final : public detail::StreamState {
 public:
  StreamState() : queue_(std::make_shared<Queue>()) {}
  ~StreamState() override;
  void synchronize() override;
  const std::shared_ptr<Queue>& queue() { return queue_; }

 private:
  std::shared_ptr<Queue> queue_;
};

class EventState final : public detail::EventState {
 public:
  void record(detail::StreamState& stream) override;
  void synchronize() override;
  bool query() override;
  void wait_on(detail::StreamState& stream) override;

 private:
  std::shared_ptr<Queue> queue_;
  std::uint64_t ticket_ = 0;
};

StreamState& as_emulated(detail::StreamState& stream);

}  // namespace tensorhub::device::emulated
