#include "progress_thread.hpp"

#include <poll.h>

namespace tensorhub::transport::ucx {
namespace {

// Progress calls per lock hold: bounds how long the caller's post()/poll() can wait for the lock.
constexpr int kBurst = 64;

}  // namespace

ProgressThread::ProgressThread(Worker& worker, std::mutex& mutex)
    : worker_(worker), mutex_(mutex), thread_([this](const std::stop_token& stop) { run(stop); }) {}

ProgressThread::~ProgressThread() {
  thread_.request_stop();
  worker_.signal();  // ends a poll() on the event fd at once
  thread_.join();
}

void ProgressThread::run(const std::stop_token& stop) {
  while (!stop.stop_requested()) {
    ucs_status_t armed = UCS_ERR_BUSY;
    {
      const std::lock_guard lock(mutex_);
      int n = 0;
      while (n < kBurst && worker_.progress() != 0) ++n;
      if (n < kBurst) armed = worker_.arm();
    }
    if (armed == UCS_OK) {
      pollfd fd{worker_.event_fd(), POLLIN, 0};
      (void)::poll(&fd, 1, kMaxSleepMs);
    } else if (armed == UCS_ERR_BUSY) {
      std::this_thread::yield();  // events pending: let the caller's thread in, then go on
    } else {
      std::this_thread::sleep_for(kFallbackPeriod);
    }
  }
}

}  // namespace tensorhub::transport::ucx
