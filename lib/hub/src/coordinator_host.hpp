// A coordinator served over gRPC from inside a hub process (private header): what rank 0 of a
// joining communicator starts when no coordinator address is given. Every rank, this one
// included, then talks to it through a GrpcClient on address(), so errors and validation are
// the same on every rank. It requires `token` on every call and grants its holders the
// operator role (README "Security model").
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
  // Listens on `listen_host` (an address of this host: the job's interface, or 127.0.0.1 when
  // the whole job runs here), on a free port. Throws TransportError if it cannot bind.
  // A non-empty `metrics` (HOST:PORT) also serves Prometheus metrics there (HubOptions).
  CoordinatorHost(coord::CoordinatorConfig config, const std::string& listen_host, std::string token,
                  const std::string& metrics = {});
  ~CoordinatorHost();
  CoordinatorHost(const CoordinatorHost&) = delete;
  CoordinatorHost& operator=(const CoordinatorHost&) = delete;

  // "host:port" for the other ranks to dial.
  const std::string& address() const { return address_; }
  // Stops serving (idempotent).
  void shutdown();

  // Where rank 0 should listen: TENSORHUB_COORD_LISTEN when set; 127.0.0.1 when every rank
  // runs on this host (`single_host`); otherwise the first non-loopback address this host's
  // name resolves to (0.0.0.0 when it resolves only to loopback).
  static std::string listen_host(bool single_host);

 private:
  std::unique_ptr<coord::Coordinator> coordinator_;
  coord::CallMetrics calls_;
  coord::MeteredClient metered_{*coordinator_, calls_};
  std::unique_ptr<coord::GrpcServer> server_;
  std::unique_ptr<coord::MetricsServer> metrics_;
  std::string address_;
};

}  // namespace tensorhub
