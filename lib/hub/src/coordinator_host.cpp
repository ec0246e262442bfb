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

CoordinatorHost::CoordinatorHost(coord::CoordinatorConfig config)
    : coordinator_(std::make_unique<coord::Coordinator>(std::move(config))),
      server_(std::make_unique<coord::GrpcServer>(*coordinator_, "0.0.0.0:0")),
      address_(server_->address_for(local_hostname())) {}

CoordinatorHost::~CoordinatorHost() { shutdown(); }

void CoordinatorHost::shutdown() {
  if (server_) server_->shutdown();
}

}  // namespace tensorhub
