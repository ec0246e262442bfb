// Name validation over gRPC: a bad model name gives the same UserError text as in-process.
#include <gtest/gtest.h>

#include <string>

#include "tensorhub/coord/coordinator.hpp"
#include "tensorhub/coord/grpc_client.hpp"
#include "tensorhub/coord/grpc_server.hpp"
#include "tensorhub/core/error.hpp"

namespace tensorhub::coord {
namespace {

using namespace std::chrono_literals;

std::string user_error_of(Client& client, const std::string& model) {
  try {
    client.latest(model);
  } catch (const UserError& e) {
    return e.what();
  }
  return "(no UserError)";
}

std::string resolve_error_of(Client& client, WorkerId reader, const std::string& model) {
  try {
    client.resolve(ResolveRequest{reader, model, std::nullopt, Group{"g", 1, 0}, 0});
  } catch (const UserError& e) {
    return e.what();
  }
  return "(no UserError)";
}

TEST(GrpcValidation, BadModelNamesGiveTheSameUserErrorInProcessAndOverGrpc) {
  Coordinator coordinator;
  GrpcServer server(coordinator, "127.0.0.1:0");
  GrpcClient client(server.address_for("127.0.0.1"), 5s);
  WorkerInfo info;
  info.endpoint = "e";
  const auto id = client.register_worker(info);
  for (const auto& bad : {std::string("m\xff\xfe", 3), std::string(2048, 'm')}) {
    SCOPED_TRACE(bad.size());
    const auto local = user_error_of(coordinator, bad);
    EXPECT_NE(local, "(no UserError)");
    EXPECT_EQ(user_error_of(client, bad), local);
    EXPECT_EQ(resolve_error_of(client, id, bad), resolve_error_of(coordinator, id, bad));
  }
}

}  // namespace
}  // namespace tensorhub::coord
