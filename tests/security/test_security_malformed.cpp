// Bodies that do not parse (issue 16 item 4): garbage, truncated, and invalid UTF-8 in a proto3
// string field, sent raw (grpc::GenericStub) to every rpc, sync and callback (long-poll) ones.
// gRPC itself answered these with INTERNAL and an empty message before any handler ran; now
// INVALID_ARGUMENT with a message, after authentication. Misuse (Finish without Resolve) is
// INVALID_ARGUMENT or FAILED_PRECONDITION, never INTERNAL.
#include <grpcpp/generic/generic_stub.h>

#include <string>
#include <vector>

#include "security_util.hpp"

namespace tensorhub::coord::security {
namespace {

const std::vector<std::string> kRpcs = {
    "RegisterWorker", "DeregisterWorker", "Heartbeat", "Publish",        "Unpublish",    "WaitDrained", "Retain",
    "Release",        "Latest",           "WaitFor",   "Resolve",        "OfferRelay",   "Acquire",     "Complete",
    "Finish",         "Status",           "Workers",   "AttachSnapshot", "BeginOffload", "EndOffload"};

// One raw unary call: `body` as the serialized request, waited for synchronously.
grpc::Status raw_call(const std::string& address, const std::string& rpc, const std::string& body,
                      const std::string& token) {
  grpc::GenericStub stub(grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + 10s);
  if (!token.empty()) ctx.AddMetadata("authorization", "Bearer " + token);
  grpc::CompletionQueue cq;
  grpc::Slice slice(body);
  grpc::ByteBuffer request(&slice, 1);
  grpc::ByteBuffer reply;
  grpc::Status status;
  auto call = stub.PrepareUnaryCall(&ctx, "/tensorhub.v1.Coordinator/" + rpc, request, &cq);
  call->StartCall();
  int tag = 1;
  call->Finish(&reply, &status, &tag);
  void* got = nullptr;
  bool ok = false;
  EXPECT_TRUE(cq.Next(&got, &ok));
  EXPECT_EQ(got, &tag);
  cq.Shutdown();
  while (cq.Next(&got, &ok)) {
  }
  return status;
}

// Bodies no request message parses: a tag varint that never ends, and field 1 as a
// length-delimited field claiming 16 bytes with 2 present.
const std::vector<std::string> kGarbage = {std::string(11, '\xff'), std::string("\x0a\x10"
                                                                                "ab",
                                                                                4)};

TEST(SecurityMalformed, GarbageAndTruncatedBodiesAreInvalidArgumentOnEveryRpc) {
  Hub hub;
  for (const auto& rpc : kRpcs) {
    for (const auto& body : kGarbage) {
      SCOPED_TRACE(rpc + " body of " + std::to_string(body.size()) + " B");
      const auto s = raw_call(hub.address(), rpc, body, hub.job_token);
      EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
      EXPECT_NE(s.error_message().find("malformed request to /tensorhub.v1.Coordinator/" + rpc), std::string::npos)
          << s.error_message();
    }
  }
}

TEST(SecurityMalformed, InvalidUtf8InAStringFieldIsInvalidArgument) {
  Hub hub;
  // field 1 (`model` of LatestRequest and WaitForRequest), 2 bytes: 0xc3 0x28 is not UTF-8.
  const std::string bad_model("\x0a\x02\xc3\x28", 4);
  for (const std::string rpc : {"Latest", "WaitFor"}) {
    SCOPED_TRACE(rpc);
    const auto s = raw_call(hub.address(), rpc, bad_model, hub.job_token);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
    EXPECT_FALSE(s.error_message().empty());
  }
  // The same body with a valid name parses (the call itself then answers normally).
  const auto ok = raw_call(hub.address(), "Latest", std::string("\x0a\x02ok", 4), hub.job_token);
  EXPECT_TRUE(ok.ok()) << ok.error_message();
}

TEST(SecurityMalformed, AMalformedBodyWithoutTheTokenIsStillUnauthenticated) {
  Hub hub;
  for (const std::string rpc : {"Publish", "WaitFor"}) {
    SCOPED_TRACE(rpc);
    const auto s = raw_call(hub.address(), rpc, kGarbage.front(), "");
    EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED) << s.error_message();
  }
}

TEST(SecurityMalformed, FinishWithoutResolveIsMisuseNotInternal) {
  Hub hub;
  Outsider raw(hub.address());
  pb::RegisterWorkerRequest reg;
  reg.mutable_info()->set_endpoint("local:r");
  reg.mutable_info()->set_transport("local");
  reg.mutable_info()->set_host("host0");
  pb::RegisterWorkerReply me;
  const auto registered = raw.stub->RegisterWorker(raw.ctx(hub.job_token).get(), reg, &me);
  ASSERT_TRUE(registered.ok()) << registered.error_message();
  pb::FinishRequest req;
  req.set_reader(me.worker());
  req.set_model("policy");
  req.set_version(1);
  req.mutable_group()->set_name("g");
  req.mutable_group()->set_size(1);
  pb::FinishReply rep;
  const auto s =
      raw.stub->Finish(raw.ctx(hub.job_token, {std::to_string(me.worker()) + ":" + me.session()}).get(), req, &rep);
  EXPECT_TRUE(s.error_code() == grpc::StatusCode::INVALID_ARGUMENT ||
              s.error_code() == grpc::StatusCode::FAILED_PRECONDITION)
      << s.error_code() << ": " << s.error_message();
  EXPECT_NE(s.error_message().find("without resolve"), std::string::npos) << s.error_message();
}

}  // namespace
}  // namespace tensorhub::coord::security
