#include "coordinator_host.hpp"

#include <unistd.h>

#include <utility>

namespace tensorhub {
namespace {

std::string local_hostname() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "localhost";
  return buf;
}

}  // namespace

CoordinatorHost::CoordinatorHost(coord::CoordinatorConfig config, const std::string& metrics)
    : coordinator_(std::make_unique<coord::Coordinator>(std::move(config))),
      server_(std::make_unique<coord::GrpcServer>(metered_, "0.0.0.0:0")),
      address_(server_->address_for(local_hostname())) {
  if (!metrics.empty()) {
    metrics_ = std::make_unique<coord::MetricsServer>(metrics,
                                                      [this] { return coord::render_metrics(*coordinator_, &calls_); });
  }
}

CoordinatorHost::~CoordinatorHost() { shutdown(); }

void CoordinatorHost::shutdown() {
  metrics_.reset();
  if (server_) server_->shutdown();
}

}  // namespace tensorhub
