// lib/sim's tensorhub method: plan-based pulls against the real in-process Coordinator
// (Coordinator::plan). What it must show is deterministic, so the tests assert it exactly:
// control messages per reader (resolve, offer_relay, plan, 3 quarter reports, the final
// complete, finish) do not grow with the chunk count, the trainer sends one copy (relay chains),
// a cross-DC pull moves one copy over the WAN, and the last reader is within a few chunk times
// of S/R on a line of hosts.
#include <gtest/gtest.h>

#include <cstdint>

#include "tensorhub/core/error.hpp"
#include "tensorhub/sim/scenario.hpp"

namespace tensorhub::sim {
namespace {

constexpr double kRate = 1e9;  // bytes/s of an 8 Gbit/s NIC

Scenario line(std::uint32_t readers, double chunk) {
  Scenario s;
  s.topo.hosts_per_rack = readers + 1;
  s.topo.nic_gbps = 8;
  s.trainers = 1;
  s.readers = readers;
  s.model_bytes = 64e6;
  s.chunk_bytes = chunk;
  return s;
}

TEST(SimPlan, MessagesPerReaderDoNotGrowWithChunks) {
  const auto few = run_method("tensorhub", line(6, 4e6));      // 16 chunks
  const auto many = run_method("tensorhub", line(6, 0.25e6));  // 256 chunks
  EXPECT_EQ(few.protocol, "plan");
  ASSERT_EQ(few.reader_s.size(), 6u);
  EXPECT_EQ(few.control_msgs, 6u * 8);
  EXPECT_EQ(many.control_msgs, 6u * 8);
  // One copy leaves the trainer; every other byte is relayed.
  EXPECT_NEAR(many.trainer_bytes, 64e6, 1);
  // A chain of 6: S/R plus about a chunk time per hop (Fluid's one-chunk lag).
  EXPECT_GE(many.last_s, many.lower_bound_s);
  EXPECT_LT(many.last_s, 64e6 / kRate + 6 * 0.25e6 / kRate + 1e-6);
}

TEST(SimPlan, Deterministic) {
  const auto a = run_method("tensorhub", line(5, 1e6));
  const auto b = run_method("tensorhub", line(5, 1e6));
  EXPECT_EQ(a.control_msgs, b.control_msgs);
  EXPECT_EQ(a.pipes, b.pipes);
  EXPECT_DOUBLE_EQ(a.last_s, b.last_s);
}

// Scenario (c) in small: 2 DCs, the trainers in DC 0, readers in both: one copy crosses the WAN.
TEST(SimPlan, OneWanCopyPerDatacenter) {
  Scenario s;
  s.topo.dcs = 2;
  s.topo.gpus_per_host = 2;
  s.topo.hosts_per_rack = 4;
  s.topo.nic_gbps = 8;
  s.topo.wan_gbps = 4;
  s.trainers = 2;
  s.readers = 8;
  s.model_bytes = 64e6;
  s.chunk_bytes = 1e6;
  const auto r = run_method("tensorhub", s);
  ASSERT_EQ(r.reader_s.size(), 8u);
  EXPECT_NEAR(r.wan_bytes, 64e6, 1);
  EXPECT_NEAR(r.trainer_bytes, 64e6, 1);
  // 8 per reader, and one more plan call by the first reader of each of the 4 hosts: it waited
  // for its neighbour GPU, the rail of the other half of the stripes (plan_rails = 2 here).
  EXPECT_EQ(r.control_msgs, 8u * 8 + 4);
}

// Rails (CoordinatorConfig::plan_rails): hosts of 4 GPUs with a NIC each; the lower bound is a
// host's 4 NICs (S / 4 NICs per reader host). Without rails the first GPU of a host gets every
// stripe through its own NIC (about 4 x the bound); with them each stripe enters the host
// through the GPU of its rail and the others get it over NVLink.
TEST(SimPlan, RailsSpreadAHostsStripesOverItsNics) {
  Scenario s;
  s.topo.gpus_per_host = 4;
  s.topo.hosts_per_rack = 8;
  s.topo.nic_gbps = 8;
  s.trainers = 16;  // one stripe each: a host's 4 rails read from 4 trainers at a time
  s.readers = 16;
  s.model_bytes = 64e6;
  s.chunk_bytes = 0.25e6;
  s.inflight = 8;
  const auto rails = run_method("tensorhub", s);
  s.plan_rails = 1;
  const auto none = run_method("tensorhub", s);
  ASSERT_EQ(rails.reader_s.size(), 16u);
  EXPECT_NEAR(rails.trainer_bytes, 64e6, 1);
  EXPECT_LT(rails.last_s, 1.15 * rails.lower_bound_s);
  EXPECT_GT(none.last_s, 3 * none.lower_bound_s);
}

// Scenario (b) in small: 2 readers join a line of 6 pulling ones, one during the pull and one
// after it; each is planned under relays (0 bytes from the trainer) and needs about S/R.
TEST(SimPlan, JoinersReadFromRelaysNotTheTrainer) {
  auto s = line(8, 1e6);
  s.joiners = 2;
  s.join_start_s = 0.03;  // the base pull takes about 64 ms
  s.join_every_s = 0.1;
  const auto r = run_method("tensorhub", s);
  ASSERT_EQ(r.joiner_s.size(), 2u);
  EXPECT_EQ(r.joiner_trainer_bytes, 0.0);
  EXPECT_NEAR(r.trainer_bytes, 64e6, 1);
  for (const auto t : r.joiner_s) {
    EXPECT_GE(t, 64e6 / kRate);
    EXPECT_LT(t, 1.2 * 64e6 / kRate);
  }
  EXPECT_THROW(run_method("star", s), UserError);
}

}  // namespace
}  // namespace tensorhub::sim
