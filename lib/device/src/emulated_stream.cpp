#include "emulated_stream.hpp"

#include <cstdio>
#include <utility>

#include "tensorhub/core/error.hpp"

namespace tensorhub::device::emulated {

void Queue::push(std::function<void()> op) {
  std::lock_guard lock(mu_);
  ops_.push_back(std::move(op));
  ++queued_;
}

std::uint64_t Queue::mark() {
  std::lock_guard lock(mu_);
  return queued_;
}

void Queue::run_until(std::uint64_t ticket) {
  std::lock_guard run(run_mu_);
  for (;;) {
    std::function<void()> op;
    {
      std::lock_guard lock(mu_);
      if (done_ >= ticket || ops_.empty()) return;
      op = std::move(ops_.front());
      ops_.pop_front();
    }
    try {
      op();
    } catch (...) {
      std::lock_guard lock(mu_);
      if (!error_) error_ = std::current_exception();
    }
    std::lock_guard lock(mu_);
    ++done_;
  }
}

void Queue::rethrow() {
  std::exception_ptr e;
  {
    std::lock_guard lock(mu_);
    e = std::exchange(error_, nullptr);
  }
  if (e) std::rethrow_exception(e);
}

StreamState::~StreamState() {
  // Like cudaStreamDestroy: queued work still completes. Its failures have nowhere to go.
  try {
    queue_->run_until(queue_->mark());
    queue_->rethrow();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tensorhub: emulated stream destroyed with failed work: %s\n", e.what());
  }
}

void StreamState::synchronize() {
  queue_->run_until(queue_->mark());
  queue_->rethrow();
}

StreamState& as_emulated(detail::StreamState& stream) {
  auto* s = dynamic_cast<StreamState*>(&stream);
  if (s == nullptr) throw UserError("emulated device: a stream of another device");
  return *s;
}

void EventState::record(detail::StreamState& stream) {
  queue_ = as_emulated(stream).queue();
  ticket_ = queue_->mark();
}

void EventState::synchronize() {
  if (!queue_) return;  // never recorded: complete, as cudaEventSynchronize says
  queue_->run_until(ticket_);
  queue_->rethrow();
}

bool EventState::query() {
  synchronize();
  return true;
}

void EventState::wait_on(detail::StreamState& stream) {
  if (!queue_) return;
  as_emulated(stream).queue()->push([q = queue_, t = ticket_] {
    q->run_until(t);
    q->rethrow();
  });
}

}  // namespace tensorhub::device::emulated
