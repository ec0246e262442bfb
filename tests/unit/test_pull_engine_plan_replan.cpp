// A source named again by a later plan (a re-plan while reads from it are still queued):
//  * the later reply carries its regions only for that reply's tensors: the reads still queued
//    for its other tensors keep the regions of the earlier reply (issue: "empty descriptors
//    after a re-plan" made a live holder look broken and the pull end with no live holder);
//  * a release of it queued before the re-plan must not reach the coordinator after the re-plan
//    pinned it again (it would unpin a holder this reader still reads).
#include <cstring>

#include "plan_engine_fixture.hpp"

namespace tensorhub::transfer {
namespace {

using namespace plan_test;

constexpr std::uint32_t kHalf = kChunks / 2;

// Two tensors, "a" (chunks 0..7) and "b" (chunks 8..15), laid out back to back like data_: a
// chunk c of the version is data_[c * kChunk, (c + 1) * kChunk).
class PullEnginePlanReplan : public PullEnginePlan {
 protected:
  PullEnginePlanReplan() {
    const std::int64_t n = kHalf * kChunk;
    const Tensor ts[] = {host_tensor("a", DType::kU8, {n}, data_.data()),
                         host_tensor("b", DType::kU8, {n}, data_.data() + n)};
    m_ = assemble_manifest("m", 1, kChunk, {describe_shard(0, ts, kChunk)});
    relay_a_ = expose(relay_buf_.data(), kHalf * kChunk);
    relay_b_ = expose(relay_buf_.data() + kHalf * kChunk, kHalf * kChunk);
    origin_a_ = expose(data_.data(), kHalf * kChunk);
    origin_b_ = expose(data_.data() + kHalf * kChunk, kHalf * kChunk);
  }

  PullStats pull_two() {
    const std::vector<Destination> dests{Destination{0, out_.data()}, Destination{1, out_.data() + kHalf * kChunk}};
    return PullEngine(client_, reader_, kSelf).run(m_, dests, o_);
  }

  // A source with a region for one tensor only, as the coordinator sends it for a reply whose
  // steps cover that tensor alone.
  static coord::PlanSource source_for(WorkerId holder, std::uint32_t tensor, const std::string& region,
                                      const std::string& progress = "") {
    coord::PlanSource s{holder, "local:peer" + std::to_string(holder), {"", ""}, progress, holder == kOrigin, 0};
    s.regions[tensor] = region;
    return s;
  }
  static coord::PlanStep step(std::uint32_t first, std::uint32_t count) {
    return coord::PlanStep{coord::ChunkRange{first, count}, 0};
  }
  bool landed(std::uint32_t first, std::uint32_t count) const {
    return std::memcmp(out_.data() + first * kChunk, data_.data() + first * kChunk, count * kChunk) == 0;
  }

  std::string relay_a_, relay_b_, origin_a_, origin_b_;
};

TEST_F(PullEnginePlanReplan, ASourceNamedAgainForAnotherTensorKeepsTheRegionsOfItsQueuedReads) {
  // Plan 1: tensor a from the relay, which holds none of it yet (its chunks wait on its progress
  // bytes); tensor b has no source yet. Plan 2 names the relay again, for tensor b only. The
  // relay then advances: tensor a's chunks, queued on it since plan 1, are read with plan 1's
  // region.
  client_.on_plan = [&](const coord::PlanRequest&) {
    coord::PlanReply reply;
    if (client_.plans.size() == 1) {
      reply.sources = {source_for(kRelay, 0, relay_a_, relay_progress_desc_)};
      reply.steps = {step(0, kHalf)};
      reply.waiting = {coord::ChunkRange{kHalf, kHalf}};
    } else if (client_.plans.size() == 2) {
      reply.sources = {source_for(kRelay, 1, relay_b_, relay_progress_desc_)};
      reply.steps = {step(kHalf, kHalf)};
    } else {
      reply.unavailable = client_.plans.back().chunks;  // reached only when a live source was dropped
    }
    return reply;
  };
  const auto advance = [this, next = 0u]() mutable {
    if (client_.plans.size() < 2 || next >= kChunks) return;
    std::copy_n(data_.begin() + next * kChunk, kChunk, relay_buf_.begin() + next * kChunk);
    relay_progress_[next++] = 1;
  };
  reader_.tick = advance;
  o_.replan_pause = std::chrono::milliseconds(1);
  o_.stall_timeout = std::chrono::milliseconds(60000);
  const auto stats = pull_two();
  EXPECT_EQ(out_, data_);
  EXPECT_EQ(stats.plan_calls, 2u);
  EXPECT_TRUE(failures().empty());
  for (const auto& op : reader_.posted) EXPECT_FALSE(op.descriptor.empty()) << "a read posted with no region";
  EXPECT_EQ(released(), std::vector<WorkerId>{kRelay});
}

TEST_F(PullEnginePlanReplan, AReleaseQueuedBeforeAReplanThatNamesTheSourceAgainIsNotSent) {
  // Plan 1: chunks 0..5 from the origin, the rest waiting. Once the origin has served them the
  // reader queues its release (no report is due at 6 of 16 chunks). Plan 2 names the origin
  // again for chunks 6..15; the report at 8 chunks must not carry the old release while the
  // origin still serves chunks 8..15. A model of the coordinator's pins checks every read.
  std::vector<std::string> errors;
  bool pinned = false;
  client_.on_plan = [&](const coord::PlanRequest& r) {
    coord::PlanReply reply;
    if (client_.plans.size() == 1) {
      reply.sources = {source_for(kOrigin, 0, origin_a_)};
      reply.steps = {step(0, 6)};
      reply.waiting = {coord::ChunkRange{6, kChunks - 6}};
    } else if (!landed(0, 6)) {
      reply.waiting = r.chunks;  // plan 2 comes once the origin's first chunks have landed
    } else {
      coord::PlanSource s{kOrigin, "local:peer2", {origin_a_, origin_b_}, "", true, 0};
      reply.sources = {s};
      reply.steps = {step(6, kChunks - 6)};
    }
    if (!reply.sources.empty()) pinned = true;  // the coordinator pins a source it plans
    return reply;
  };
  client_.on_complete = [&](const coord::CompleteRequest& r) {
    for (const auto h : r.release_sources) {
      if (h != kOrigin) continue;
      if (!pinned) errors.push_back("released twice");
      pinned = false;
    }
  };
  reader_.on_post = [&](const transport::ReadOp& op) {
    if (!pinned) errors.push_back("read at offset " + std::to_string(op.offset) + " from an unpinned source");
  };
  o_.replan_pause = std::chrono::milliseconds(1);
  const auto stats = pull_two();
  EXPECT_EQ(out_, data_);
  EXPECT_GE(stats.plan_calls, 2u);
  EXPECT_TRUE(errors.empty()) << errors.front();
  EXPECT_FALSE(pinned) << "the origin's pin is released at the end";
  EXPECT_TRUE(failures().empty());
}

}  // namespace
}  // namespace tensorhub::transfer
