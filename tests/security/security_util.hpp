// Shared by the security tests: a real Coordinator behind a GrpcServer that requires a token,
// legitimate workers through GrpcClient, and an outsider speaking raw gRPC (generated stubs).
#pragma once

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "tensorhub.grpc.pb.h"
#include "tensorhub/coord/auth.hpp"
#include "tensorhub/coord/coordinator.hpp"
#include "tensorhub/coord/grpc_client.hpp"
#include "tensorhub/coord/grpc_server.hpp"

namespace tensorhub::coord::security {

namespace pb = ::tensorhub::v1;
using namespace std::chrono_literals;

struct Hub {
  explicit Hub(CoordinatorConfig cfg = {}) : coordinator(cfg) {
    GrpcServerOptions o;
    o.auth.token = job_token;
    o.auth.operator_token = operator_token;
    server = std::make_unique<GrpcServer>(coordinator, "127.0.0.1:0", o);
  }
  std::string address() const { return server->address_for("127.0.0.1"); }
  // A legitimate client (the job's token).
  std::unique_ptr<GrpcClient> client(const std::string& token) const {
    ClientAuth a;
    a.token = token;
    return std::make_unique<GrpcClient>(address(), 5s, a);
  }

  std::string job_token = generate_token();
  std::string operator_token = generate_token();
  Coordinator coordinator;
  std::unique_ptr<GrpcServer> server;
};

// An outsider: raw stubs, whatever metadata it chooses.
struct Outsider {
  explicit Outsider(const std::string& address)
      : stub(pb::Coordinator::NewStub(grpc::CreateChannel(address, grpc::InsecureChannelCredentials()))) {}

  // Context with an optional bearer token and optional session values.
  std::unique_ptr<grpc::ClientContext> ctx(const std::string& token = {},
                                           const std::vector<std::string>& sessions = {}) const {
    auto c = std::make_unique<grpc::ClientContext>();
    c->set_deadline(std::chrono::system_clock::now() + 10s);
    if (!token.empty()) c->AddMetadata("authorization", "Bearer " + token);
    for (const auto& s : sessions) c->AddMetadata("x-tensorhub-session", s);
    return c;
  }

  std::unique_ptr<pb::Coordinator::Stub> stub;
};

inline WorkerInfo worker_info(const std::string& name) {
  WorkerInfo w;
  w.endpoint = "local:" + name;
  w.transport = "local";
  w.host = "host0";
  return w;
}

}  // namespace tensorhub::coord::security
