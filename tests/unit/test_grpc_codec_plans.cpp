// Round trips of the plan-based pull messages (PlanRequest, PlanReply, the plan fields of
// RelayOffer and CompleteRequest) through protobuf and the wire, and rejection of malformed ones.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "grpc_codec.hpp"
#include "tensorhub/coord/plan_book.hpp"
#include "tensorhub/core/error.hpp"

namespace tensorhub::coord {
namespace {

namespace pb = ::tensorhub::v1;
using codec::from_proto;
using codec::to_proto;

template <class T>
T round_trip(const T& value) {
  auto message = to_proto(value);
  decltype(message) parsed;
  EXPECT_TRUE(parsed.ParseFromString(message.SerializeAsString()));
  return from_proto(parsed);
}

const std::string kBlob("\xff\x00\x01progress\xfe", 12);

TEST(GrpcCodecPlans, PlanRequestRoundTrips) {
  const PlanRequest r{7, "m", 3, {ChunkRange{0, 10}, ChunkRange{25, 1}}, {4, 9}};
  const auto back = round_trip(r);
  EXPECT_EQ(back.reader, 7u);
  EXPECT_EQ(back.model, "m");
  EXPECT_EQ(back.version, 3u);
  EXPECT_EQ(back.chunks, r.chunks);
  EXPECT_EQ(back.exclude, r.exclude);
}

TEST(GrpcCodecPlans, PlanReplyRoundTrips) {
  PlanReply r;
  r.sources.push_back(PlanSource{5, kBlob, {"", kBlob}, kBlob, false, 3});
  r.sources.push_back(PlanSource{1, "ep", {"r0", ""}, "", true, 0});
  r.steps = {PlanStep{ChunkRange{0, 4}, 1}, PlanStep{ChunkRange{4, 8}, 0}};
  r.waiting = {ChunkRange{12, 2}};
  r.unavailable = {ChunkRange{14, 1}};
  const auto back = round_trip(r);
  ASSERT_EQ(back.sources.size(), 2u);
  EXPECT_EQ(back.sources[0].holder, 5u);
  EXPECT_EQ(back.sources[0].endpoint, kBlob);
  EXPECT_EQ(back.sources[0].regions, r.sources[0].regions);
  EXPECT_EQ(back.sources[0].progress, kBlob);
  EXPECT_FALSE(back.sources[0].origin);
  EXPECT_EQ(back.sources[0].depth, 3u);
  EXPECT_TRUE(back.sources[1].origin);
  ASSERT_EQ(back.steps.size(), 2u);
  EXPECT_EQ(back.steps[1].range, (ChunkRange{4, 8}));
  EXPECT_EQ(back.steps[1].source, 0u);
  EXPECT_EQ(back.waiting, r.waiting);
  EXPECT_EQ(back.unavailable, r.unavailable);
}

TEST(GrpcCodecPlans, RelayOfferAndCompleteCarryThePlanFields) {
  const auto offer = round_trip(RelayOffer{2, "m", 1, {"a", ""}, kBlob});
  EXPECT_EQ(offer.progress, kBlob);
  CompleteRequest c;
  c.reader = 2;
  c.model = "m";
  c.version = 1;
  c.held_ranges = {ChunkRange{0, 100}, ChunkRange{200, 5}};
  c.release_sources = {8, 1};
  const auto back = round_trip(c);
  EXPECT_EQ(back.held_ranges, c.held_ranges);
  EXPECT_EQ(back.release_sources, c.release_sources);
}

TEST(GrpcCodecPlans, RejectsMalformedPlans) {
  pb::PlanReply bad_index;
  bad_index.add_sources()->set_holder(1);
  bad_index.add_steps()->set_source(1);
  EXPECT_THROW(from_proto(bad_index), UserError);
  pb::PlanRequest past_end;
  auto* r = past_end.add_chunks();
  r->set_first(UINT32_MAX);
  r->set_count(2);
  EXPECT_THROW(from_proto(past_end), UserError);
  pb::PlanRequest many;
  for (std::uint32_t i = 0; i <= kMaxPlanExclude; ++i) many.add_exclude(i);
  EXPECT_THROW(from_proto(many), UserError);
}

}  // namespace
}  // namespace tensorhub::coord
