// lib/sim's tensorhub method with resharding (Scenario::reader_tp): a TP=8 trainer, readers in
// TP=2 (and an uneven 3) rollout groups, each pulling only its box through the real
// Coordinator's plans. Column-parallel boxes (dim 0) relay the trainer shards they hold, so one
// copy leaves the trainers; row-parallel boxes (dim 1) relay nothing, so each reader's half comes
// from the trainers. The last reader is within a few chunk times of its own bytes over its NIC.
#include <gtest/gtest.h>

#include <cstdint>

#include "tensorhub/core/error.hpp"
#include "tensorhub/sim/scenario.hpp"

namespace tensorhub::sim {
namespace {

constexpr double kRate = 1e9;  // bytes/s of an 8 Gbit/s NIC
constexpr double kS = 64e6;
constexpr double kChunk = 0.5e6;  // 128 chunks, 16 per trainer shard

Scenario tp8(std::uint32_t readers, std::uint32_t reader_tp, std::uint32_t dim) {
  Scenario s;
  s.topo.hosts_per_rack = 8 + readers;
  s.topo.nic_gbps = 8;
  s.trainers = 8;
  s.readers = readers;
  s.model_bytes = kS;
  s.chunk_bytes = kChunk;
  s.reader_tp = reader_tp;
  s.reshard_dim = dim;
  return s;
}

TEST(SimReshard, ReaderRangesAreTheirBoxes) {
  const auto s = tp8(4, 2, 0);
  EXPECT_EQ(reader_ranges(s, 0), (std::vector<std::pair<double, double>>{{0, kS / 2}}));
  EXPECT_EQ(reader_ranges(s, 3), (std::vector<std::pair<double, double>>{{kS / 2, kS}}));
  EXPECT_TRUE(relays_shard(s, 0, 3));
  EXPECT_FALSE(relays_shard(s, 0, 4));
  // TP=3 of TP=8 along dim 1: rank 1's columns [1/3, 2/3) meet shards 2..5 (each in all of them).
  const auto r = tp8(3, 3, 1);
  EXPECT_EQ(reader_ranges(r, 1), (std::vector<std::pair<double, double>>{{2 * kS / 8, 6 * kS / 8}}));
  EXPECT_FALSE(relays_shard(r, 1, 3)) << "strided boxes are not offered";
  EXPECT_DOUBLE_EQ(reader_bytes(tp8(2, 0, 0), 1), kS);
}

TEST(SimReshard, ColumnParallelBoxesRelaySoOneCopyLeavesTheTrainers) {
  const auto r = run_method("tensorhub", tp8(8, 2, 0));
  ASSERT_EQ(r.reader_s.size(), 8u);
  EXPECT_NEAR(r.trainer_bytes, kS, 1) << "each trainer shard leaves its trainer once";
  EXPECT_DOUBLE_EQ(r.lower_bound_s, kS / 2 / kRate) << "a reader's half over its NIC";
  EXPECT_GE(r.last_s, r.lower_bound_s);
  EXPECT_LT(r.last_s, r.lower_bound_s + 8 * kChunk / kRate) << "within a few chunk times (relay hops)";
  EXPECT_EQ(r.control_msgs, 8u * 8) << "resolve, offer, plan, 3 quarter reports, complete, finish";
  // The same readers pulling the whole model take about twice as long.
  const auto whole = run_method("tensorhub", tp8(8, 0, 0));
  EXPECT_GT(whole.last_s, 1.8 * r.last_s);
}

TEST(SimReshard, RowParallelBoxesReadEveryByteFromTheTrainers) {
  // Each trainer serves its shard to the 4 readers of its half: 4 x S/8 over its NIC = S/2, the
  // same as a reader's own half (the bound). Measured here, not yet met: readers take their
  // shards lowest first, so the 4 readers of a half meet at one trainer after another (0.128 s
  // with K = 4 and plan_fanout 4, 4x the bound), and with K = 2 half of them wait for a slot
  // (0.223 s). Relayed dim-0 boxes end near the bound (above).
  auto s = tp8(8, 2, 1);
  const auto r = run_method("tensorhub", s);
  ASSERT_EQ(r.reader_s.size(), 8u);
  EXPECT_NEAR(r.trainer_bytes, 8 * kS / 2, 1) << "no relays: each reader's half from the trainers";
  EXPECT_DOUBLE_EQ(r.lower_bound_s, kS / 2 / kRate);
  EXPECT_GE(r.last_s, r.lower_bound_s);
  const auto relayed = run_method("tensorhub", tp8(8, 2, 0));
  EXPECT_GT(r.last_s, relayed.last_s);
}

TEST(SimReshard, UnevenTp3ReadersGetTheirChunks) {
  for (const std::uint32_t dim : {0u, 1u}) {
    const auto r = run_method("tensorhub", tp8(6, 3, dim));
    ASSERT_EQ(r.reader_s.size(), 6u) << "dim " << dim;
    EXPECT_GE(r.trainer_bytes, kS - 1) << "dim " << dim;
    EXPECT_GE(r.last_s, r.lower_bound_s) << "dim " << dim;
  }
}

TEST(SimReshard, BadSettingsAreRefused) {
  EXPECT_THROW(run_method("tensorhub-chunk", tp8(2, 2, 0)), UserError);
  EXPECT_THROW(run_method("tensorhub", tp8(2, 2, 2)), UserError);
}

}  // namespace
}  // namespace tensorhub::sim
