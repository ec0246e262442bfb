// lib/sim: max-min sharing on hand-checked topologies, the pipelined broadcast closed forms, and
// a small per-chunk TensorHub run against the real in-process Coordinator (deterministic
// counts); test_sim_plan.cpp has the plan-based method.
#include <gtest/gtest.h>

#include <vector>

#include "tensorhub/sim/fluid.hpp"
#include "tensorhub/sim/scenario.hpp"

namespace tensorhub::sim {
namespace {

constexpr double kRate = 1e9;  // bytes/s of an 8 Gbit/s NIC

TopologyConfig flat(std::uint32_t hosts) {
  TopologyConfig t;
  t.hosts_per_rack = hosts;
  t.nic_gbps = 8;
  return t;
}

// A: 0->1, B: 0->2, C: 3->2, D: 4->2. Node 2's NIC is shared by B, C, D (1/3 each); A gets the
// rest of node 0's NIC (2/3). A ends at 1.5 s, then B, C, D keep 1/3 (node 2 is their
// bottleneck) and end at 3 s.
TEST(SimMaxMin, ProgressiveFillingGivesExactRates) {
  Network net(flat(5));
  Fluid f(net, 0);
  for (std::uint32_t n : {0u, 3u, 4u}) f.hold(n, 0, kRate);
  std::vector<double> done(4, -1);
  const std::uint32_t src[] = {0, 0, 3, 4}, dst[] = {1, 2, 2, 2};
  for (int i = 0; i < 4; ++i) f.read(src[i], dst[i], 0, kRate, [&, i] { done[i] = f.now(); });
  f.run();
  EXPECT_NEAR(done[0], 1.5, 1e-9);
  for (int i = 1; i < 4; ++i) EXPECT_NEAR(done[i], 3.0, 1e-9);
  EXPECT_NEAR(net.links()[net.node(0).nic_up].bytes, 2 * kRate, 1);
}

// Two flows into one reader from different senders share its NIC equally (0.5 GB/s each);
// when the 0.5 GB one ends at 1 s the survivor takes all of it: its last 0.5 GB end at 1.5 s.
TEST(SimMaxMin, SurvivorTakesTheFreedCapacity) {
  Network net(flat(3));
  Fluid f(net, 0);
  f.hold(0, 0, kRate);
  f.hold(1, 0, kRate);
  double a = -1, b = -1;
  f.read(0, 2, 0, kRate, [&] { a = f.now(); });
  f.read(1, 2, 0, 0.5 * kRate, [&] { b = f.now(); });
  f.run();
  EXPECT_NEAR(b, 1.0, 1e-9);
  EXPECT_NEAR(a, 1.5, 1e-9);
}

Scenario line(std::uint32_t readers) {
  Scenario s;
  s.topo = flat(readers + 1);
  s.trainers = 1;
  s.readers = readers;
  s.model_bytes = 64e6;
  s.chunk_bytes = 1e6;
  return s;
}

TEST(SimClosedForm, Star) {
  const auto r = run_method("star", line(4));
  EXPECT_NEAR(r.last_s, 4 * 64e6 / kRate, 1e-9);
  EXPECT_NEAR(r.trainer_bytes, 4 * 64e6, 1);
}

// A pipelined chain: S/R plus one chunk time per hop after the first.
TEST(SimClosedForm, Ring) {
  const auto r = run_method("ring", line(6));
  EXPECT_NEAR(r.last_s, 64e6 / kRate + 5 * 1e6 / kRate, 1e-9);
  EXPECT_NEAR(r.trainer_bytes, 64e6, 1);
  EXPECT_NEAR(r.last_s / r.lower_bound_s, 1 + 5.0 / 64, 1e-9);
}

// Tree of 3: the trainer feeds r0 at R; r0 feeds r1 and r2 at R/2 each, starting once it holds
// the first chunk: c/R + 2S/R.
TEST(SimClosedForm, Tree) {
  const auto r = run_method("tree", line(3));
  EXPECT_NEAR(r.last_s, 1e6 / kRate + 2 * 64e6 / kRate, 1e-9);
  EXPECT_NEAR(r.reader_s[0], 64e6 / kRate, 1e-9);
}

// Store-copy through 1 server: upload S, then 2 readers share the server's NIC: 3 S/R.
TEST(SimClosedForm, Store) {
  auto s = line(2);
  s.topo.storage = 1;
  s.topo.storage_gbps = 8;
  const auto r = run_method("store", s);
  EXPECT_NEAR(r.last_s, 3 * 64e6 / kRate, 1e-9);
}

// The real Coordinator, per-chunk protocol (tensorhub-chunk): every reader finishes, relays carry most bytes
// (K = 1), and the control messages are deterministic: run twice, same counts.
TEST(SimTensorHub, RealCoordinatorSmallRun) {
  auto s = line(4);
  s.model_bytes = 32e6;
  s.max_readers_per_source = 1;
  const auto a = run_method("tensorhub-chunk", s);
  const auto b = run_method("tensorhub-chunk", s);
  ASSERT_EQ(a.reader_s.size(), 4u);
  EXPECT_EQ(a.protocol, "acquire");
  EXPECT_EQ(a.control_msgs, b.control_msgs);
  EXPECT_EQ(a.pipes, b.pipes);
  EXPECT_EQ(a.pipes, 4u * 32);  // one read per chunk per reader
  // resolve + offer + finish, one complete per chunk, at least one acquire per 3 chunks.
  EXPECT_GE(a.control_msgs, 4u * (3 + 32 + 32 / 3));
  EXPECT_LT(a.trainer_bytes, 4 * 32e6 * 0.75);
  EXPECT_GE(a.trainer_bytes, 32e6 - 1);
  EXPECT_GE(a.last_s, a.lower_bound_s);
  EXPECT_DOUBLE_EQ(a.last_s, b.last_s);
}

}  // namespace
}  // namespace tensorhub::sim
