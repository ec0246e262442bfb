// Outsider attacks on the control plane (issue 16 items 1, 2): no or wrong token on every rpc,
// acting for another worker, retain/release/attach without role, false failure reports, and
// what Workers() reveals. Each case was an accepted attack before authentication existed.
#include <algorithm>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "../unit/coord_test_util.hpp"
#include "security_util.hpp"

namespace tensorhub::coord::security {
namespace {

using Call = std::function<grpc::Status(grpc::ClientContext*, pb::Coordinator::Stub&)>;

// One call of every rpc, with empty (or minimal) requests.
std::vector<std::pair<std::string, Call>> every_rpc() {
  std::vector<std::pair<std::string, Call>> calls;
#define TH_RPC(Name, Req, Rep)                                                     \
  calls.emplace_back(#Name, [](grpc::ClientContext* c, pb::Coordinator::Stub& s) { \
    pb::Req req;                                                                   \
    pb::Rep rep;                                                                   \
    return s.Name(c, req, &rep);                                                   \
  })
  TH_RPC(RegisterWorker, RegisterWorkerRequest, RegisterWorkerReply);
  TH_RPC(DeregisterWorker, DeregisterWorkerRequest, DeregisterWorkerReply);
  TH_RPC(Heartbeat, HeartbeatRequest, HeartbeatReply);
  TH_RPC(Publish, PublishRequest, PublishReply);
  TH_RPC(Unpublish, UnpublishRequest, UnpublishReply);
  TH_RPC(WaitDrained, WaitDrainedRequest, WaitDrainedReply);
  TH_RPC(Retain, RetainRequest, RetainReply);
  TH_RPC(Release, ReleaseRequest, ReleaseReply);
  TH_RPC(Latest, LatestRequest, LatestReply);
  TH_RPC(WaitFor, WaitForRequest, WaitForReply);
  TH_RPC(Resolve, ResolveRequest, ResolveReply);
  TH_RPC(OfferRelay, RelayOffer, OfferRelayReply);
  TH_RPC(Acquire, AcquireRequest, AcquireReply);
  TH_RPC(Complete, CompleteRequest, CompleteReply);
  TH_RPC(Finish, FinishRequest, FinishReply);
  TH_RPC(Status, StatusRequest, StatusReply);
  TH_RPC(Workers, WorkersRequest, WorkersReply);
  TH_RPC(AttachSnapshot, AttachSnapshotRequest, AttachSnapshotReply);
  TH_RPC(BeginOffload, BeginOffloadRequest, BeginOffloadReply);
  TH_RPC(EndOffload, EndOffloadRequest, EndOffloadReply);
#undef TH_RPC
  return calls;
}

TEST(SecurityAuth, EveryRpcRefusesNoTokenAndWrongToken) {
  Hub hub;
  Outsider evil(hub.address());
  const auto wrong = generate_token();
  const auto calls = every_rpc();
  EXPECT_EQ(calls.size(), 20u);
  for (const auto& [name, call] : calls) {
    SCOPED_TRACE(name);
    const auto none = call(evil.ctx().get(), *evil.stub);
    EXPECT_EQ(none.error_code(), grpc::StatusCode::UNAUTHENTICATED) << none.error_message();
    EXPECT_NE(none.error_message().find("no credential"), std::string::npos) << none.error_message();
    const auto bad = call(evil.ctx(wrong).get(), *evil.stub);
    EXPECT_EQ(bad.error_code(), grpc::StatusCode::UNAUTHENTICATED) << bad.error_message();
    // A token of the right length that differs only in its last character.
    auto almost = hub.job_token;
    almost.back() = almost.back() == '0' ? '1' : '0';
    EXPECT_EQ(call(evil.ctx(almost).get(), *evil.stub).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  }
  EXPECT_TRUE(hub.coordinator.workers().empty());  // nobody got registered
  // A GrpcClient without the token gets a UserError naming the problem, not a hang.
  auto anonymous = hub.client("");
  EXPECT_THROW(anonymous->status(), UserError);
}

struct Scene {
  Hub hub;
  std::unique_ptr<GrpcClient> publisher = hub.client(hub.job_token);
  WorkerId a = publisher->register_worker(worker_info("a"));
  Outsider evil{hub.address()};
  std::string evil_session;  // an insider: the job's token and a worker of its own
  WorkerId e = 0;

  Scene() {
    publisher->publish(request(a, "m", 1, Group{"trainer", 1, 0}, {{"w", 3 * kChunk}}));
    pb::RegisterWorkerRequest req;
    req.mutable_info()->set_endpoint("local:evil");
    req.mutable_info()->set_transport("local");
    req.mutable_info()->set_host("evil");
    pb::RegisterWorkerReply rep;
    const auto st = evil.stub->RegisterWorker(evil.ctx(hub.job_token).get(), req, &rep);
    EXPECT_TRUE(st.ok()) << st.error_message();
    e = rep.worker();
    EXPECT_FALSE(rep.session().empty());
    evil_session = std::to_string(e) + ":" + rep.session();
  }
  // The outsider with the job token and its own session (or a forged one for `a`).
  std::unique_ptr<grpc::ClientContext> insider() const { return evil.ctx(hub.job_token, {evil_session}); }
  WorkerState state_of(WorkerId w) {
    for (const auto& s : hub.coordinator.workers()) {
      if (s.worker == w) return s.state;
    }
    return WorkerState::kDead;
  }
};

TEST(SecurityAuth, AWorkerActsOnlyForItself) {
  Scene s;
  const std::vector<std::string> forged{std::to_string(s.a) + ":" + generate_token(), std::to_string(s.a) + ":",
                                        std::to_string(s.a), "garbage"};
  {
    pb::UnpublishRequest req;
    req.set_worker(s.a);
    req.set_model("m");
    req.set_version(1);
    pb::UnpublishReply rep;
    EXPECT_EQ(s.evil.stub->Unpublish(s.insider().get(), req, &rep).error_code(), grpc::StatusCode::PERMISSION_DENIED);
    EXPECT_EQ(s.evil.stub->Unpublish(s.evil.ctx(s.hub.job_token, forged).get(), req, &rep).error_code(),
              grpc::StatusCode::PERMISSION_DENIED);
    // Not even the operator may unpublish a worker's reference without its session.
    EXPECT_EQ(s.evil.stub->Unpublish(s.evil.ctx(s.hub.operator_token).get(), req, &rep).error_code(),
              grpc::StatusCode::PERMISSION_DENIED);
  }
  {
    pb::DeregisterWorkerRequest req;
    req.set_worker(s.a);
    pb::DeregisterWorkerReply rep;
    EXPECT_EQ(s.evil.stub->DeregisterWorker(s.insider().get(), req, &rep).error_code(),
              grpc::StatusCode::PERMISSION_DENIED);
  }
  {
    pb::PublishRequest req;
    req.set_worker(s.a);
    req.set_model("m");
    req.set_version(2);
    pb::PublishReply rep;
    EXPECT_EQ(s.evil.stub->Publish(s.insider().get(), req, &rep).error_code(), grpc::StatusCode::PERMISSION_DENIED);
  }
  {
    pb::AcquireRequest req;  // descriptors go only to the reader itself
    req.set_reader(s.a);
    req.set_model("m");
    req.set_version(1);
    req.add_chunks(0);
    req.set_max_assign(4);
    pb::AcquireReply rep;
    EXPECT_EQ(s.evil.stub->Acquire(s.insider().get(), req, &rep).error_code(), grpc::StatusCode::PERMISSION_DENIED);
  }
  {
    pb::CompleteRequest req;  // a failure report in the publisher's name
    req.set_reader(s.a);
    req.set_model("m");
    req.set_version(1);
    pb::CompleteReply rep;
    EXPECT_EQ(s.evil.stub->Complete(s.insider().get(), req, &rep).error_code(), grpc::StatusCode::PERMISSION_DENIED);
  }
  // The publisher is untouched: still registered, alive, its version readable, and it can
  // still unpublish it itself.
  EXPECT_NO_THROW(s.publisher->heartbeat(s.a));
  EXPECT_EQ(s.state_of(s.a), WorkerState::kAlive);
  EXPECT_EQ(s.publisher->latest("m"), std::optional<std::uint64_t>(1));
  EXPECT_EQ(s.publisher->unpublish(s.a, "m", 1), 0u);
  s.publisher->deregister_worker(s.a);
}

TEST(SecurityAuth, FalseFailureReportForAReadNotAssignedIsRefused) {
  Scene s;
  pb::CompleteRequest req;
  req.set_reader(s.e);  // its own id: authenticated, but it was never assigned this read
  req.set_model("m");
  req.set_version(1);
  auto* r = req.add_results();
  r->set_chunk(0);
  r->set_holder(s.a);
  r->set_ok(false);
  pb::CompleteReply rep;
  const auto st = s.evil.stub->Complete(s.insider().get(), req, &rep);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << st.error_message();
  EXPECT_EQ(s.state_of(s.a), WorkerState::kAlive);  // not made suspect by the lie
}

TEST(SecurityAuth, RetainReleaseAttachNeedThePublisherOrTheOperator) {
  Scene s;
  pb::RetainRequest retain;
  retain.set_model("m");
  retain.set_version(1);
  pb::RetainReply retain_rep;
  pb::ReleaseRequest release;
  release.set_model("m");
  release.set_version(1);
  pb::ReleaseReply release_rep;
  EXPECT_EQ(s.evil.stub->Retain(s.insider().get(), retain, &retain_rep).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(s.evil.stub->Release(s.insider().get(), release, &release_rep).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  pb::AttachSnapshotRequest attach;
  attach.set_path("/tmp/fake.h5");
  attach.mutable_manifest()->set_model("m");
  attach.mutable_manifest()->set_version(1);
  pb::AttachSnapshotReply attach_rep;
  EXPECT_EQ(s.evil.stub->AttachSnapshot(s.insider().get(), attach, &attach_rep).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  for (const auto& m : s.hub.coordinator.status()) {
    for (const auto& v : m.versions) {
      EXPECT_EQ(v.retained, 0u);
      EXPECT_TRUE(v.snapshot.empty());
    }
  }
  // The publisher may; so may the operator.
  EXPECT_NO_THROW(s.publisher->retain("m", 1));
  EXPECT_NO_THROW(s.publisher->release("m", 1));
  EXPECT_TRUE(s.evil.stub->Retain(s.evil.ctx(s.hub.operator_token).get(), retain, &retain_rep).ok());
  EXPECT_TRUE(s.evil.stub->Release(s.evil.ctx(s.hub.operator_token).get(), release, &release_rep).ok());
}

TEST(SecurityAuth, WorkersNeverRevealEndpoints) {
  Scene s;
  pb::WorkersReply rep;
  ASSERT_TRUE(s.evil.stub->Workers(s.insider().get(), pb::WorkersRequest{}, &rep).ok());
  EXPECT_EQ(rep.workers_size(), 2);
  for (const auto& w : rep.workers()) EXPECT_TRUE(w.info().endpoint().empty()) << w.info().endpoint();
}

}  // namespace
}  // namespace tensorhub::coord::security
