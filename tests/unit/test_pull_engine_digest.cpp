// Chunks the data path hashed as it copied them (ReadOp::digest, Completion::digest;
// plan_engine_fixture.hpp, TickTransport::digest): the engine asks for a digest of every chunk
// that lands in host memory when it checks chunks, takes the path's digest instead of hashing
// the chunk again, and still catches a corrupt chunk (in place, scattered or staged) and reads it
// again from another source, in plan and acquire mode, with and without verifier threads.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "plan_engine_fixture.hpp"

namespace tensorhub::transfer::plan_test {
namespace {

class PullEngineDigest : public PullEnginePlan {
 protected:
  PullEngineDigest() { reader_.digest = true; }
};

TEST_F(PullEngineDigest, EveryHostChunkIsCheckedByThePathsDigest) {
  for (const std::uint32_t threads : {0u, 2u}) {
    SCOPED_TRACE(threads);
    o_.verify_threads = threads;
    reader_.posted.clear();
    std::fill(out_.begin(), out_.end(), 0);
    std::fill(own_progress_.begin(), own_progress_.end(), 0);
    client_.on_plan = [&](const coord::PlanRequest& r) { return all_from(r, source(kOrigin, origin_region_)); };
    const auto stats = pull();
    EXPECT_EQ(out_, data_);
    EXPECT_EQ(stats.digested_bytes, kChunks * kChunk);
    ASSERT_EQ(reader_.posted.size(), kChunks);
    for (const auto& op : reader_.posted) EXPECT_EQ(op.digest, m_.checksum_algorithm);
  }
}

TEST_F(PullEngineDigest, ACorruptChunkIsCaughtByItsDigestAndReadAgain) {
  for (const std::uint32_t threads : {0u, 2u}) {
    SCOPED_TRACE(threads);
    o_.verify_threads = threads;
    client_.plans.clear();
    client_.completes.clear();
    std::fill(own_progress_.begin(), own_progress_.end(), 0);
    expect_checksum_mismatch_excludes_the_source();
  }
}

TEST_F(PullEngineDigest, WithNoOtherSourceACorruptChunkIsChunksCorrupt) {
  expect_corrupt_chunk_with_no_other_source_is_chunks_corrupt();
}

TEST_F(PullEngineDigest, ScatteredAndStagedBoxChunksAreCheckedByTheirDigest) {
  o_.relay = false;
  o_.progress_bytes = nullptr;
  // Rows of 1000 bytes 4000 apart: whole chunks land scattered, the last (an edge) is staged.
  const std::vector<transfer::Run> rows{transfer::Run{0, 1000, 1000, kChunks * kChunk / 1000, 1000, 4000}};
  for (const std::uint32_t threads : {0u, 2u}) {
    SCOPED_TRACE(threads);
    o_.verify_threads = threads;
    client_.plans.clear();
    client_.on_plan = [&](const coord::PlanRequest& r) {
      if (client_.plans.size() == 1) return all_from(r, source(kBad, corrupt_region_));
      return all_from(r, source(kOrigin, origin_region_));
    };
    std::vector<unsigned char> out(4000 * (kChunks * kChunk / 1000) + 4000, 0);
    const std::vector<Destination> dests{Destination{0, out.data(), MemoryKind::kHost, rows}};
    const auto stats = PullEngine(client_, reader_, kSelf).run(m_, dests, o_);
    EXPECT_EQ(out, expected(rows, out.size()));
    EXPECT_EQ(stats.checksum_mismatches, 1u);
    EXPECT_EQ(stats.scattered_bytes, (kChunks - 1) * kChunk);
    EXPECT_EQ(stats.staged_bytes, kChunk);
    EXPECT_EQ(stats.digested_bytes, (kChunks + 1) * kChunk) << "every read, the corrupt one too";
  }
}

TEST_F(PullEngineDigest, AcquireModeUsesTheDigestToo) {
  o_.plan = false;
  bool served_bad = false;
  client_.on_acquire = [&](const coord::AcquireRequest& r) {
    coord::AcquireReply reply;
    for (const auto c : r.chunks) {
      if (reply.assignments.size() == r.max_assign) break;
      const bool bad = c == 5 && !served_bad;  // the first time: from a corrupt source
      served_bad |= bad;
      reply.assignments.push_back(coord::Assignment{c, bad ? kBad : kOrigin, bad ? "local:peer4" : "local:peer2",
                                                    bad ? corrupt_region_ : origin_region_, m_.chunks[c].offset, !bad});
    }
    return reply;
  };
  client_.on_complete = {};
  const auto stats = pull();
  EXPECT_EQ(out_, data_);
  EXPECT_EQ(stats.checksum_mismatches, 1u);
  EXPECT_EQ(stats.digested_bytes, (kChunks + 1) * kChunk);
}

TEST_F(PullEngineDigest, APullThatChecksNothingAsksForNoDigest) {
  o_.verify = false;
  o_.relay = false;
  o_.progress_bytes = nullptr;
  client_.on_plan = [&](const coord::PlanRequest& r) { return all_from(r, source(kOrigin, origin_region_)); };
  const auto stats = pull();
  EXPECT_EQ(out_, data_);
  EXPECT_EQ(stats.digested_bytes, 0u);
  for (const auto& op : reader_.posted) EXPECT_FALSE(op.digest.has_value());
}

}  // namespace
}  // namespace tensorhub::transfer::plan_test
