// The chunk engine with box destinations (Destination::runs; plan_engine_fixture.hpp): only the
// chunks the runs touch are planned and read; a chunk one segment holds whole lands in place, the
// others (box edges, strided segments, a chunk two destinations need) go through a staging slot,
// are verified there and only then copied out: a corrupt edge chunk never reaches the
// destination, and is read again from another source.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "plan_engine_fixture.hpp"

namespace tensorhub::transfer::plan_test {
namespace {

class PullEngineRuns : public PullEnginePlan {
 protected:
  PullEngineRuns() {
    o_.relay = false;
    o_.progress_bytes = nullptr;
  }
  PullStats pull_runs(std::vector<Destination> dests) { return PullEngine(client_, reader_, kSelf).run(m_, dests, o_); }
};

TEST_F(PullEngineRuns, ARangeReadsOnlyItsChunksAndStagesOnlyTheEdges) {
  client_.on_plan = [&](const coord::PlanRequest& r) { return all_from(r, source(kOrigin, origin_region_)); };
  // Bytes 5000 .. 5000 + 3 chunks + 100: chunk 1 (partly), 2, 3 whole, 4 (partly).
  const std::vector<transfer::Run> runs{transfer::Run{5000, 0, 3 * kChunk + 100, 1, 0, 0}};
  std::vector<unsigned char> out(3 * kChunk + 100, 0);
  const auto stats = pull_runs({Destination{0, out.data(), MemoryKind::kHost, runs}});
  EXPECT_EQ(out, expected(runs, out.size()));
  ASSERT_EQ(client_.plans.size(), 1u);
  EXPECT_EQ(client_.plans[0].chunks, (std::vector<coord::ChunkRange>{{1, 4}}));
  EXPECT_EQ(stats.bytes, 4 * kChunk);
  EXPECT_EQ(stats.staged_bytes, 2 * kChunk) << "the two edge chunks";
  EXPECT_EQ(stats.wanted_bytes, out.size());
  EXPECT_EQ(held_reported(), 0u) << "a pull into boxes does not relay";
}

TEST_F(PullEngineRuns, StridedSegmentsAndTwoDestinationsOfOneTensor) {
  client_.on_plan = [&](const coord::PlanRequest& r) { return all_from(r, source(kOrigin, origin_region_)); };
  // 100 bytes of every 1000 (a dim-1 slice of rows of 1000 bytes), and a second destination
  // that needs some of the same chunks.
  const std::vector<transfer::Run> strided{transfer::Run{300, 0, 100, 60, 1000, 100}};
  const std::vector<transfer::Run> range{transfer::Run{20000, 0, 9000, 1, 0, 0}};
  std::vector<unsigned char> a(6000, 0);
  std::vector<unsigned char> b(9000, 0);
  const auto stats = pull_runs(
      {Destination{0, a.data(), MemoryKind::kHost, strided}, Destination{0, b.data(), MemoryKind::kHost, range}});
  EXPECT_EQ(a, expected(strided, a.size()));
  EXPECT_EQ(b, expected(range, b.size()));
  // The strided run ends at byte 59400 (chunk 14); the range covers chunks 4 .. 7.
  EXPECT_EQ(stats.bytes, 15 * kChunk);
  EXPECT_EQ(stats.staged_bytes, 15 * kChunk) << "every chunk holds several segments";
}

// A row-parallel box: every byte of the source goes to the destination, in rows of 1000 bytes
// 4000 apart (its columns are a quarter of the reader's).
const std::vector<transfer::Run> kRows{transfer::Run{0, 1000, 1000, kChunks* kChunk / 1000, 1000, 4000}};

TEST_F(PullEngineRuns, AChunkThatFillsStridedRowsIsReadStraightIntoThem) {
  client_.on_plan = [&](const coord::PlanRequest& r) { return all_from(r, source(kOrigin, origin_region_)); };
  std::vector<unsigned char> out(4000 * (kChunks * kChunk / 1000) + 4000, 0);
  const auto stats = pull_runs({Destination{0, out.data(), MemoryKind::kHost, kRows}});
  EXPECT_EQ(out, expected(kRows, out.size()));
  // The run's 65 rows end 536 bytes into the last chunk: that one is an edge, staged.
  EXPECT_EQ(stats.scattered_bytes, (kChunks - 1) * kChunk);
  EXPECT_EQ(stats.staged_bytes, kChunk);
  std::size_t scattered = 0;
  for (const auto& op : reader_.posted) {
    if (op.pieces.empty()) continue;
    ++scattered;
    std::uint64_t sum = 0;
    for (const auto& p : op.pieces) sum += p.length;
    EXPECT_EQ(sum, op.length);
    EXPECT_EQ(op.dst, out.data()) << "pieces are offsets into the destination";
  }
  EXPECT_EQ(scattered, kChunks - 1);
}

TEST_F(PullEngineRuns, WithoutScatterReadsTheSameChunksAreStaged) {
  client_.on_plan = [&](const coord::PlanRequest& r) { return all_from(r, source(kOrigin, origin_region_)); };
  std::vector<unsigned char> out(4000 * (kChunks * kChunk / 1000) + 4000, 0);
  o_.scatter_reads = false;
  auto stats = pull_runs({Destination{0, out.data(), MemoryKind::kHost, kRows}});
  EXPECT_EQ(out, expected(kRows, out.size()));
  EXPECT_EQ(stats.scattered_bytes, 0u);
  EXPECT_EQ(stats.staged_bytes, kChunks * kChunk);
  // A path that cannot scatter: the same.
  o_.scatter_reads = true;
  reader_.scatter = false;
  std::fill(out.begin(), out.end(), 0);
  stats = pull_runs({Destination{0, out.data(), MemoryKind::kHost, kRows}});
  EXPECT_EQ(out, expected(kRows, out.size()));
  EXPECT_EQ(stats.staged_bytes, kChunks * kChunk);
}

TEST_F(PullEngineRuns, ACorruptScatteredChunkIsCaughtAndReadAgain) {
  for (const std::uint32_t threads : {0u, 2u}) {  // verified inline, and on the verifier threads
    SCOPED_TRACE(threads);
    client_.plans.clear();
    o_.verify_threads = threads;
    client_.on_plan = [&](const coord::PlanRequest& r) {
      if (client_.plans.size() == 1) return all_from(r, source(kBad, corrupt_region_));
      return all_from(r, source(kOrigin, origin_region_));
    };
    std::vector<unsigned char> out(4000 * (kChunks * kChunk / 1000) + 4000, 0);
    const auto stats = pull_runs({Destination{0, out.data(), MemoryKind::kHost, kRows}});
    EXPECT_EQ(out, expected(kRows, out.size()));
    EXPECT_EQ(stats.checksum_mismatches, 1u);
    EXPECT_EQ(stats.scattered_bytes, (kChunks - 1) * kChunk) << "the corrupt chunk counts once, when good";
    ASSERT_EQ(client_.plans.size(), 2u);
    EXPECT_EQ(client_.plans[1].exclude, std::vector<WorkerId>{kBad});
  }
}

TEST_F(PullEngineRuns, ACorruptEdgeChunkNeverReachesTheDestinationAndIsReadAgain) {
  client_.on_plan = [&](const coord::PlanRequest& r) {
    if (client_.plans.size() == 1) return all_from(r, source(kBad, corrupt_region_));
    return all_from(r, source(kOrigin, origin_region_));
  };
  // Chunk 5 is corrupt at the bad source; the range ends inside it.
  const std::vector<transfer::Run> runs{transfer::Run{4 * kChunk, 0, kChunk + 10, 1, 0, 0}};
  std::vector<unsigned char> out(kChunk + 10, 0);
  const auto stats = pull_runs({Destination{0, out.data(), MemoryKind::kHost, runs}});
  EXPECT_EQ(out, expected(runs, out.size()));
  EXPECT_EQ(stats.checksum_mismatches, 1u);
  ASSERT_EQ(client_.plans.size(), 2u);
  EXPECT_EQ(client_.plans[1].exclude, std::vector<WorkerId>{kBad});
}

TEST_F(PullEngineRuns, WithNoGoodSourceTheStagedBytesAreNotCopied) {
  client_.on_plan = [&](const coord::PlanRequest& r) {
    if (client_.plans.size() == 1) return all_from(r, source(kBad, corrupt_region_));
    coord::PlanReply reply;
    reply.unavailable = r.chunks;
    return reply;
  };
  // Only chunk 5's first bytes, which the corrupt copy has right (its bad byte is byte 1 of 5).
  const std::vector<transfer::Run> runs{transfer::Run{5 * kChunk + 2, 0, 100, 1, 0, 0}};
  std::vector<unsigned char> out(100, 0);
  EXPECT_THROW(pull_runs({Destination{0, out.data(), MemoryKind::kHost, runs}}), ChunksCorrupt);
  EXPECT_EQ(out, std::vector<unsigned char>(100, 0)) << "bytes of a chunk that failed its checksum were copied";
}

TEST_F(PullEngineRuns, AcquireModeReadsTheSameWay) {
  o_.plan = false;
  client_.on_acquire = [&](const coord::AcquireRequest& r) {
    coord::AcquireReply reply;
    for (const auto c : r.chunks) {
      if (reply.assignments.size() == r.max_assign) break;
      reply.assignments.push_back(
          coord::Assignment{c, kOrigin, "local:peer2", origin_region_, m_.chunks[c].offset, true});
    }
    return reply;
  };
  client_.on_complete = {};
  const std::vector<transfer::Run> runs{transfer::Run{700, 0, 50, 30, 2000, 60}};
  std::vector<unsigned char> out(30 * 60, 0);
  const auto stats = pull_runs({Destination{0, out.data(), MemoryKind::kHost, runs}});
  EXPECT_EQ(out, expected(runs, out.size()));
  EXPECT_EQ(stats.bytes, 15 * kChunk);
  // Rows that fill whole chunks land scattered, verified inline.
  std::vector<unsigned char> rows(4000 * (kChunks * kChunk / 1000) + 4000, 0);
  const auto scattered = pull_runs({Destination{0, rows.data(), MemoryKind::kHost, kRows}});
  EXPECT_EQ(rows, expected(kRows, rows.size()));
  EXPECT_EQ(scattered.scattered_bytes, (kChunks - 1) * kChunk);
}

TEST_F(PullEngineRuns, ASourceItIsDoneWithIsReleasedBeforeItAsksAgain) {
  // The first plan gives chunks 0 and 1 from the origin and leaves the rest waiting (another
  // reader holds their source's slot). The origin must be released before the next plan call:
  // the other reader may be waiting for exactly that slot (two box readers, neither relaying,
  // deadlocked until the deadline before).
  client_.on_plan = [&](const coord::PlanRequest& r) {
    if (client_.plans.size() > 1) return all_from(r, source(kOrigin, origin_region_));
    coord::PlanReply reply;
    reply.sources.push_back(source(kOrigin, origin_region_));
    reply.steps.push_back(coord::PlanStep{coord::ChunkRange{0, 2}, 0});
    reply.waiting.push_back(coord::ChunkRange{2, kChunks - 2});
    return reply;
  };
  const std::vector<transfer::Run> runs{transfer::Run{0, 0, kChunks * kChunk, 1, 0, 0}};
  std::vector<unsigned char> out(kChunks * kChunk, 0);
  pull_runs({Destination{0, out.data(), MemoryKind::kHost, runs}});
  EXPECT_EQ(out, data_);
  ASSERT_GE(client_.plans.size(), 2u);
  const auto second_plan =
      std::find(std::find(client_.calls.begin(), client_.calls.end(), "plan") + 1, client_.calls.end(), "plan");
  ASSERT_NE(second_plan, client_.calls.end());
  const auto completes_before = std::count(client_.calls.begin(), second_plan, "complete");
  ASSERT_GE(completes_before, 1);
  EXPECT_EQ(client_.completes.front().release_sources, std::vector<WorkerId>{kOrigin});
}

}  // namespace
}  // namespace tensorhub::transfer::plan_test
