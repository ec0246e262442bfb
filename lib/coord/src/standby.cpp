#include "tensorhub/coord/standby.hpp"

#include <utility>

#include "tensorhub/coord/grpc_client.hpp"
#include "tensorhub/core/error.hpp"

namespace tensorhub::coord {

StandbyWatch::StandbyWatch(StandbyOptions options) : options_(std::move(options)), log_("coord.standby") {
  if (options_.primary.empty()) throw UserError("standby: the primary's address is empty");
  if (options_.primary.find(',') != std::string::npos) {
    throw UserError("standby: --standby-of takes one address (the primary), not a list");
  }
  if (options_.probe.count() <= 0 || options_.takeover_after < options_.probe) {
    throw UserError("standby: need 0 < probe interval <= takeover time");
  }
  primary_ = std::make_unique<GrpcClient>(options_.primary, options_.probe, options_.auth);
  thread_ = std::thread([this] { run(); });
}

StandbyWatch::~StandbyWatch() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

std::string StandbyWatch::refusal() const {
  if (active()) return {};
  return "standby coordinator: the primary " + options_.primary + " is serving";
}

bool StandbyWatch::wait_active(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  cv_.wait_for(lock, timeout, [this] { return active_.load() || stop_; });
  return active();
}

void StandbyWatch::run() {
  using Clock = std::chrono::steady_clock;
  auto last_answer = Clock::now();
  bool seen = false;
  std::unique_lock lock(mu_);
  while (!stop_) {
    lock.unlock();
    const auto sent = Clock::now();
    try {
      primary_->heartbeat(0);
      last_answer = Clock::now();
      if (!seen) log_.info("watching primary " + options_.primary);
      seen = true;
    } catch (const std::exception&) {
      // no answer: counts towards the takeover
    }
    const auto silent = Clock::now() - last_answer;
    lock.lock();
    if (silent >= options_.takeover_after) {
      active_.store(true);
      log_.warn("primary " + options_.primary + " silent for " +
                std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(silent).count()) +
                " ms: this standby is now the active coordinator");
      cv_.notify_all();
      return;
    }
    cv_.wait_until(lock, sent + options_.probe, [this] { return stop_; });
  }
}

}  // namespace tensorhub::coord
