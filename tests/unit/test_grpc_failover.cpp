// Coordinator failover over real gRPC on loopback: a client with "primary,standby" addresses,
// a standby that refuses calls until it takes over, and StandbyWatch taking over when the
// primary stops answering.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>

#include "tensorhub/coord/coordinator.hpp"
#include "tensorhub/coord/grpc_client.hpp"
#include "tensorhub/coord/grpc_server.hpp"
#include "tensorhub/coord/standby.hpp"
#include "tensorhub/core/error.hpp"

namespace tensorhub::coord {
namespace {

using namespace std::chrono_literals;

WorkerInfo info() {
  WorkerInfo w;
  w.endpoint = "e";
  w.transport = "local";
  w.host = "h";
  return w;
}

TEST(GrpcFailover, ClientMovesToTheStandbyOnceItServes) {
  Coordinator primary;
  Coordinator standby;
  auto primary_server = std::make_unique<GrpcServer>(primary, "127.0.0.1:0");
  std::atomic<bool> active{false};
  GrpcServerOptions so;
  so.refuse = [&active] { return active.load() ? std::string() : std::string("standby: primary serving"); };
  GrpcServer standby_server(standby, "127.0.0.1:0", so);
  GrpcClient client(primary_server->address_for("127.0.0.1") + "," + standby_server.address_for("127.0.0.1"), 1s);

  const auto id = client.register_worker(info());
  EXPECT_NO_THROW(primary.heartbeat(id));  // registered at the primary
  EXPECT_THROW(standby.heartbeat(id), UnknownWorker);

  primary_server.reset();  // the primary dies; the standby has not taken over
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_THROW(client.heartbeat(id), TransportError);
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 800ms);  // kept trying until the deadline

  active = true;  // takeover: the worker is unknown there and registers again
  EXPECT_THROW(client.heartbeat(id), UnknownWorker);
  const auto again = client.register_worker(info());
  EXPECT_NE(again, id);
  EXPECT_NO_THROW(standby.heartbeat(again));
  EXPECT_EQ(client.heartbeat(again).lease_ms, 5000u);
}

TEST(GrpcFailover, AnEmptyEntryInTheAddressListIsAUserError) {
  EXPECT_THROW(GrpcClient("127.0.0.1:1,,127.0.0.1:2", 1s), UserError);
}

TEST(StandbyWatch, TakesOverWhenThePrimaryStopsAnswering) {
  Coordinator primary;
  auto server = std::make_unique<GrpcServer>(primary, "127.0.0.1:0");
  StandbyOptions o;
  o.primary = server->address_for("127.0.0.1");
  o.probe = 50ms;
  o.takeover_after = 400ms;
  StandbyWatch watch(o);
  EXPECT_FALSE(watch.wait_active(700ms));  // the primary answers: stay passive
  EXPECT_NE(watch.refusal().find("standby"), std::string::npos);
  const auto killed = std::chrono::steady_clock::now();
  server.reset();
  ASSERT_TRUE(watch.wait_active(5s));
  const auto took = std::chrono::steady_clock::now() - killed;
  EXPECT_GE(took, 350ms);
  EXPECT_LT(took, 3s);
  EXPECT_TRUE(watch.refusal().empty());
}

TEST(StandbyWatch, RejectsBadOptions) {
  StandbyOptions o;
  EXPECT_THROW(StandbyWatch{o}, UserError);  // no primary
  o.primary = "a:1,b:2";
  EXPECT_THROW(StandbyWatch{o}, UserError);  // a list
  o.primary = "127.0.0.1:1";
  o.probe = 500ms;
  o.takeover_after = 100ms;
  EXPECT_THROW(StandbyWatch{o}, UserError);
}

}  // namespace
}  // namespace tensorhub::coord
