// A coordinator served over gRPC from inside a hub process (private header): what rank 0 of a
// joining communicator starts when no coordinator address is given. Every rank, this one
// included, then talks to it through a GrpcClient on address(), so errors and validation are
// the same on every rank.
#pragma once

#include <memory>
#include <string>

#include "tensorhub/coord/coordinator.hpp"
#include "tensorhub/coord/grpc_server.hpp"
#include "tensorhub/coord/metrics.hpp"
#include "tensorhub/coord/metrics_server.hpp"

namespace tensorhub {

class CoordinatorHost {
 public:
  // Listens on every interface, on a free port. Throws TransportError if it cannot bind.
  // A non-empty `metrics` (HOST:PORT) also serves Prometheus metrics there (HubOptions).
  explicit CoordinatorHost(coord::CoordinatorConfig config, const std::string& metrics = {});
  ~CoordinatorHost();
  CoordinatorHost(const CoordinatorHost&) = delete;
  CoordinatorHost& operator=(const CoordinatorHost&) = delete;

  // "host:port" for the other ranks to dial.
  const std::string& address() const { return address_; }
  // Stops serving (idempotent).
  void shutdown();

 private:
  std::unique_ptr<coord::Coordinator> coordinator_;
  coord::CallMetrics calls_;
  coord::MeteredClient metered_{*coordinator_, calls_};
  std::unique_ptr<coord::GrpcServer> server_;
  std::unique_ptr<coord::MetricsServer> metrics_;
  std::string address_;
};

}  // namespace tensorhub
