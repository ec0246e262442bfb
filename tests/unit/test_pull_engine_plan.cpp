// lib/transfer PullEngine, plan mode, against a scripted coordinator (FakePlanClient) over the
// in-process `local` transport: the engine follows the plan, waits on a relay's progress bytes,
// gives up a stalled, failing or corrupt source (reported, excluded, planned again), plans
// `waiting` chunks again after a pause, ends on `unavailable`, can be cancelled, falls back to
// acquire on PlanUnsupported, and makes a small, fixed number of control calls.
#include "plan_engine_fixture.hpp"

namespace tensorhub::transfer {
namespace {

using namespace plan_test;

TEST_F(PullEnginePlan, FollowsThePlanWithOnePlanCallAndFewCompletes) {
  client_.on_plan = [&](const coord::PlanRequest& r) { return all_from(r, source(kOrigin, origin_region_)); };
  const auto stats = pull();
  EXPECT_EQ(out_, data_);
  EXPECT_TRUE(stats.planned);
  EXPECT_EQ(stats.plan_calls, 1u);
  ASSERT_EQ(client_.plans.size(), 1u);
  EXPECT_EQ(client_.plans[0].chunks, (std::vector<coord::ChunkRange>{{0, kChunks}}));
  EXPECT_TRUE(client_.plans[0].exclude.empty());
  // Each quarter and the end, not per chunk: the count does not grow with the chunks.
  EXPECT_LE(client_.completes.size(), 5u);
  EXPECT_EQ(stats.complete_calls, client_.completes.size());
  EXPECT_EQ(held_reported(), kChunks);
  EXPECT_EQ(released(), std::vector<WorkerId>{kOrigin});
  EXPECT_TRUE(failures().empty());
  EXPECT_EQ(stats.origin_bytes, data_.size());
  EXPECT_EQ(stats.sources.at(kOrigin).chunks, kChunks);
  EXPECT_EQ(client_.acquires, 0u);
  EXPECT_TRUE(std::all_of(own_progress_.begin(), own_progress_.end(), [](unsigned char b) { return b == 1; }));
}

TEST_F(PullEnginePlan, WaitsOnTheRelaysProgressBytes) {
  relay_advances(3);
  client_.on_plan = [&](const coord::PlanRequest& r) {
    return all_from(r, source(kRelay, relay_region_, relay_progress_desc_));
  };
  const auto stats = pull();
  EXPECT_EQ(out_, data_);
  EXPECT_EQ(stats.plan_calls, 1u);
  EXPECT_EQ(stats.relay_bytes, data_.size());
  EXPECT_GT(stats.progress_reads, 1u);
  EXPECT_EQ(stats.stalls, 0u);
  EXPECT_EQ(stats.failed_reads, 0u);
  EXPECT_EQ(released(), std::vector<WorkerId>{kRelay});
}

TEST_F(PullEnginePlan, StalledRelayIsReportedExcludedAndPlannedAround) {
  // The relay never advances: after the stall timeout its chunks come from the origin.
  client_.on_plan = [&](const coord::PlanRequest& r) {
    if (client_.plans.size() == 1) return all_from(r, source(kRelay, relay_region_, relay_progress_desc_));
    return all_from(r, source(kOrigin, origin_region_));
  };
  const auto stats = pull();
  EXPECT_EQ(out_, data_);
  EXPECT_EQ(stats.stalls, 1u);
  ASSERT_EQ(client_.plans.size(), 2u);
  EXPECT_EQ(client_.plans[1].exclude, std::vector<WorkerId>{kRelay});
  EXPECT_EQ(client_.plans[1].chunks, (std::vector<coord::ChunkRange>{{0, kChunks}}));
  ASSERT_EQ(failures().size(), 1u);
  EXPECT_EQ(failures()[0].holder, kRelay);
  // The failure reached the coordinator before it was asked again.
  const auto second_plan = std::find(client_.calls.begin() + 1, client_.calls.end(), "plan");
  EXPECT_NE(std::find(client_.calls.begin(), second_plan, "complete"), second_plan);
  EXPECT_EQ(released(), (std::vector<WorkerId>{kOrigin, kRelay}));
}

TEST_F(PullEnginePlan, FailedReadIsReportedAndItsChunksPlannedAgain) {
  client_.on_plan = [&](const coord::PlanRequest& r) {
    if (client_.plans.size() > 1) return all_from(r, source(kOrigin, origin_region_));
    // Chunks 0..7 from the origin, 8..15 from a source whose reads fail.
    coord::PlanReply reply;
    reply.sources = {source(kOrigin, origin_region_), source(kBad, short_region_)};
    reply.steps = {coord::PlanStep{{0, 8}, 0}, coord::PlanStep{{8, 8}, 1}};
    return reply;
  };
  const auto stats = pull();
  EXPECT_EQ(out_, data_);
  EXPECT_GE(stats.failed_reads, 1u);
  ASSERT_EQ(client_.plans.size(), 2u);
  EXPECT_EQ(client_.plans[1].exclude, std::vector<WorkerId>{kBad});
  // Only what the bad source had is planned again.
  std::uint32_t asked = 0;
  for (const auto& r : client_.plans[1].chunks) {
    EXPECT_GE(r.first, 8u);
    asked += r.count;
  }
  EXPECT_EQ(asked, 8u);
  EXPECT_EQ(failures().size(), 1u);
  EXPECT_EQ(stats.sources.count(kBad), 0u);
  // The origin once per plan that named it (each plan pins its sources again).
  EXPECT_EQ(released(), (std::vector<WorkerId>{kOrigin, kOrigin, kBad}));
}

TEST_F(PullEnginePlan, ChecksumMismatchExcludesTheSource) { expect_checksum_mismatch_excludes_the_source(); }

TEST_F(PullEnginePlan, CorruptChunkWithNoOtherSourceIsChunksCorrupt) {
  expect_corrupt_chunk_with_no_other_source_is_chunks_corrupt();
}

TEST_F(PullEnginePlan, UnavailableChunksEndThePull) {
  client_.on_plan = [&](const coord::PlanRequest& r) {
    coord::PlanReply reply = all_from(r, source(kOrigin, origin_region_));
    reply.steps = {coord::PlanStep{{0, 8}, 0}};
    reply.unavailable = {coord::ChunkRange{8, 8}};
    return reply;
  };
  EXPECT_THROW(pull(), ChunksUnavailable);
  EXPECT_EQ(released(), std::vector<WorkerId>{kOrigin}) << "the pins of the plan's sources are released";
}

TEST_F(PullEnginePlan, WaitingChunksArePlannedAgainAfterAPause) {
  client_.on_plan = [&](const coord::PlanRequest& r) {
    if (client_.plans.size() < 3) {
      coord::PlanReply reply;
      reply.waiting = r.chunks;
      return reply;
    }
    return all_from(r, source(kOrigin, origin_region_));
  };
  o_.replan_pause = std::chrono::milliseconds(5);
  const auto start = std::chrono::steady_clock::now();
  const auto stats = pull();
  EXPECT_EQ(out_, data_);
  EXPECT_EQ(stats.plan_calls, 3u);
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(5 + 10));
  EXPECT_TRUE(failures().empty());
}

TEST_F(PullEnginePlan, CancelStopsThePullAndReleasesItsSources) {
  std::atomic<bool> cancel{false};
  o_.cancel = &cancel;
  o_.stall_timeout = std::chrono::milliseconds(60000);
  reader_.tick = [&, polls = 0]() mutable {
    if (++polls == 50) cancel = true;
  };
  client_.on_plan = [&](const coord::PlanRequest& r) {
    return all_from(r, source(kRelay, relay_region_, relay_progress_desc_));
  };
  EXPECT_THROW(pull(), Cancelled);
  EXPECT_EQ(released(), std::vector<WorkerId>{kRelay});
}

TEST_F(PullEnginePlan, AnInvalidPlanIsATransportError) {
  client_.on_plan = [&](const coord::PlanRequest&) {
    coord::PlanReply reply;
    reply.sources = {source(kOrigin, origin_region_)};
    reply.steps = {coord::PlanStep{{kChunks - 1, 2}, 0}};  // past the last chunk
    return reply;
  };
  EXPECT_THROW(pull(), TransportError);
  EXPECT_EQ(released(), std::vector<WorkerId>{kOrigin});
}

TEST_F(PullEnginePlan, PlanUnsupportedFallsBackToAcquire) {
  client_.on_plan = [](const coord::PlanRequest&) -> coord::PlanReply {
    throw coord::PlanUnsupported("old coordinator");
  };
  client_.on_acquire = [&](const coord::AcquireRequest& r) {
    coord::AcquireReply reply;
    for (std::size_t i = 0; i < r.chunks.size() && i < r.max_assign; ++i) {
      const auto c = r.chunks[i];
      reply.assignments.push_back(
          coord::Assignment{c, kOrigin, "local:peer2", origin_region_, m_.chunks[c].offset, true});
    }
    return reply;
  };
  const auto stats = pull();
  EXPECT_EQ(out_, data_);
  EXPECT_FALSE(stats.planned);
  EXPECT_EQ(client_.plans.size(), 1u);
  EXPECT_GE(client_.acquires, 1u);
  EXPECT_TRUE(std::all_of(own_progress_.begin(), own_progress_.end(), [](unsigned char b) { return b == 1; }));

  // plan = false: not even asked.
  client_.plans.clear();
  out_.assign(data_.size(), 0);
  o_.plan = false;
  pull();
  EXPECT_EQ(out_, data_);
  EXPECT_TRUE(client_.plans.empty());
}

}  // namespace
}  // namespace tensorhub::transfer
