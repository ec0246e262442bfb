// lib/transfer plan mode with EngineOptions::verify_threads > 0: landed chunks are checked on the
// Verifier's threads while the next ones are read. The same outcomes as inline verification: every
// chunk verified and marked held, a corrupt chunk excluding its source and read again elsewhere,
// a corrupt chunk with no other source ending the pull (ChunksCorrupt, never marked held), and a
// cancel; plus the Verifier on its own (results, wait_idle).
#include <atomic>

#include "plan_engine_fixture.hpp"
#include "verifier.hpp"

namespace tensorhub::transfer {
namespace {

using namespace plan_test;

class VerifyThreads : public PullEnginePlan {
 protected:
  VerifyThreads() { o_.verify_threads = 2; }
};

TEST_F(VerifyThreads, EveryChunkIsVerifiedAndHeld) {
  client_.on_plan = [&](const coord::PlanRequest& r) { return all_from(r, source(kOrigin, origin_region_)); };
  const auto stats = pull();
  EXPECT_EQ(out_, data_);
  EXPECT_EQ(stats.plan_calls, 1u);
  EXPECT_EQ(held_reported(), kChunks);
  EXPECT_EQ(released(), std::vector<WorkerId>{kOrigin});
  EXPECT_TRUE(std::all_of(own_progress_.begin(), own_progress_.end(), [](unsigned char b) { return b == 1; }));
}

TEST_F(VerifyThreads, ChecksumMismatchExcludesTheSource) { expect_checksum_mismatch_excludes_the_source(); }

TEST_F(VerifyThreads, CorruptChunkWithNoOtherSourceIsChunksCorrupt) {
  expect_corrupt_chunk_with_no_other_source_is_chunks_corrupt();
}

TEST(Verifier, ChecksChunksOnItsThreadsAndWaitsForThem) {
  std::vector<unsigned char> bytes(1 << 20);
  for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<unsigned char>(i * 7);
  const auto good = checksum64(ChecksumAlgorithm::kXxh3_64, bytes.data(), 4096);
  Verifier v(2);
  ASSERT_TRUE(v.async());
  for (std::uint32_t c = 0; c < 64; ++c) {
    v.submit(c, bytes.data(), 4096, ChecksumAlgorithm::kXxh3_64, c == 9 ? good + 1 : good);
  }
  std::vector<Verifier::Result> out;
  while (out.size() < 64) v.collect(out);
  EXPECT_EQ(v.pending(), 0u);
  for (const auto& r : out) {
    EXPECT_EQ(r.good, r.chunk != 9) << r.chunk;
    EXPECT_LE(r.start, r.end);
  }
  for (std::uint32_t c = 0; c < 64; ++c) v.submit(c, bytes.data(), bytes.size(), ChecksumAlgorithm::kXxh3_64, 0);
  v.wait_idle();  // drops the queue, waits for the checks running
  EXPECT_EQ(v.pending(), 0u);
  EXPECT_FALSE(Verifier(0).async());
}

}  // namespace
}  // namespace tensorhub::transfer
