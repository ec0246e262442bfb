// A flood of long polls must not starve liveness (issue 16 item 5): 1,100 concurrent WaitFor
// calls from one client used to take every one of the synchronous server's 1,024 threads, so
// heartbeats got RESOURCE_EXHAUSTED and the live publisher was declared dead.
#include <grpcpp/grpcpp.h>

#include <memory>
#include <thread>
#include <vector>

#include "../unit/coord_test_util.hpp"
#include "security_util.hpp"

namespace tensorhub::coord::security {
namespace {

constexpr int kFlood = 1100;

TEST(SecurityFlood, ElevenHundredWaitForsLeaveHeartbeatsServed) {
  CoordinatorConfig cfg;
  cfg.lease = 1500ms;
  Hub hub(cfg);
  auto publisher = hub.client(hub.job_token);
  const auto a = publisher->register_worker(worker_info("a"));
  publisher->publish(request(a, "m", 1, Group{"trainer", 1, 0}, {{"w", 3 * kChunk}}));

  // The flood: an authenticated client (a buggy or hostile member of the job) waits for a
  // version that never comes, 1,100 times at once, each for 4 s.
  Outsider noisy(hub.address());
  grpc::CompletionQueue cq;
  struct Call {
    std::unique_ptr<grpc::ClientContext> ctx;
    pb::WaitForReply rep;
    grpc::Status status;
    std::unique_ptr<grpc::ClientAsyncResponseReader<pb::WaitForReply>> reader;
  };
  std::vector<Call> calls(kFlood);
  pb::WaitForRequest req;
  req.set_model("m");
  req.set_newer_than(1);
  req.set_timeout_ms(4000);
  for (int i = 0; i < kFlood; ++i) {
    auto& c = calls[static_cast<std::size_t>(i)];
    c.ctx = noisy.ctx(hub.job_token);
    c.reader = noisy.stub->AsyncWaitFor(c.ctx.get(), req, &cq);
    c.reader->Finish(&c.rep, &c.status, &c);
  }

  // Meanwhile the publisher heartbeats, each time within its lease, for longer than a lease.
  for (int i = 0; i < 8; ++i) {
    EXPECT_NO_THROW(publisher->heartbeat(a)) << "heartbeat " << i;
    std::this_thread::sleep_for(250ms);
  }
  EXPECT_NO_THROW(publisher->status());  // plain calls are served too
  for (const auto& w : hub.coordinator.workers()) EXPECT_EQ(w.state, WorkerState::kAlive) << w.worker;
  EXPECT_EQ(publisher->latest("m"), std::optional<std::uint64_t>(1));

  // Every waiter gets its answer (no version) when its timeout passes; none was refused.
  int answered = 0;
  void* tag = nullptr;
  bool ok = false;
  while (answered < kFlood && cq.Next(&tag, &ok)) {
    auto* c = static_cast<Call*>(tag);
    EXPECT_TRUE(c->status.ok()) << c->status.error_message();
    EXPECT_FALSE(c->rep.has_version());
    ++answered;
  }
  EXPECT_EQ(answered, kFlood);
  cq.Shutdown();
  while (cq.Next(&tag, &ok)) {
  }
}

TEST(SecurityFlood, AWaitForIsAnsweredAsSoonAsTheVersionComes) {
  Hub hub;
  auto publisher = hub.client(hub.job_token);
  auto reader = hub.client(hub.job_token);
  const auto a = publisher->register_worker(worker_info("a"));
  std::thread later([&] {
    std::this_thread::sleep_for(200ms);
    publisher->publish(request(a, "m", 1, Group{"trainer", 1, 0}, {{"w", kChunk}}));
  });
  EXPECT_EQ(reader->wait_for("m", std::nullopt, 20s), std::optional<std::uint64_t>(1));
  later.join();
}

}  // namespace
}  // namespace tensorhub::coord::security
