#include "heartbeat.hpp"

#include <algorithm>
#include <exception>
#include <utility>

#include "tensorhub/core/error.hpp"

namespace tensorhub {

HeartbeatThread::HeartbeatThread(coord::Client& client, Hooks hooks, Logger log)
    : client_(client), hooks_(std::move(hooks)), log_(std::move(log)) {
  thread_ = std::thread([this] { run(); });
}

HeartbeatThread::~HeartbeatThread() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void HeartbeatThread::run() {
  std::unique_lock lock(mu_);
  while (!stop_) {
    lock.unlock();
    tick();  // at once first: learns the lease (and so the interval)
    lock.lock();
    cv_.wait_for(lock, interval_, [this] { return stop_; });
  }
}

void HeartbeatThread::tick() {
  const auto id = hooks_.self();
  try {
    const auto reply = client_.heartbeat(id);
    if (reply.lease_ms > 0) {
      interval_ = std::clamp(std::chrono::milliseconds(reply.lease_ms / 5), std::chrono::milliseconds(20),
                             std::chrono::milliseconds(2000));
    }
    if (unreachable_) log_.info("coordinator reachable again");
    unreachable_ = false;
  } catch (const UnknownWorker& e) {
    // The API thread may have registered again while this heartbeat (of the old id) was in
    // flight, e.g. across a coordinator takeover: that loss is already repaired, and a second
    // registration would leave the first one's re-published references orphaned.
    if (hooks_.self() != id) return;
    if (!lost_.exchange(true)) log_.warn(std::string("the coordinator forgot this worker: ") + e.what());
  } catch (const TransportError& e) {
    if (!unreachable_) log_.warn(std::string("heartbeat: ") + e.what() + " (retrying)");
    unreachable_ = true;
    return;
  } catch (const std::exception& e) {
    log_.warn(std::string("heartbeat: ") + e.what());
    return;
  }
  try {
    if (lost_.load() || hooks_.pending()) hooks_.rebuild();
  } catch (const std::exception& e) {
    log_.warn(std::string("re-registering: ") + e.what() + " (retrying)");
  }
}

}  // namespace tensorhub
