// HubCore plan mode without MPI (several hubs over the `local` transport, one in-process
// coordinator that plans): pulls follow one plan; two readers pulling at once form a relay
// chain through the first one's progress bytes (K = 1: one copy from the publisher); plan mode
// off (HubOptions::plan = false) acquires chunk by chunk.
#include <gtest/gtest.h>

#include "hub_test_util.hpp"

namespace tensorhub::test {
namespace {

constexpr std::uint64_t kBytes = 24 * kChunk;  // 24 chunks per tensor

TEST_F(LocalHubsK1, PlannedPullsMakeOnePlanCall) {
  auto& pub = add_hub();
  auto& a = add_hub();
  Buffers src(2, kBytes);
  src.fill(1);
  pub.publish("m", 1, src.tensors, std::nullopt);
  Buffers da(2, kBytes);
  const auto r = a.pull("m", Version::latest(), da.tensors, {});
  EXPECT_EQ(da.mismatches(1), 0u);
  EXPECT_TRUE(r.planned);
  EXPECT_EQ(r.plan_calls, 1u);
  EXPECT_EQ(r.origin_bytes, 2 * kBytes);
}

TEST_F(LocalHubsK1, ConcurrentReadersChainThroughProgressBytes) {
  auto& pub = add_hub();
  auto& a = add_hub();
  auto& b = add_hub();
  Buffers src(2, kBytes);
  src.fill(3);
  pub.publish("m", 3, src.tensors, std::nullopt);
  Buffers da(2, kBytes);
  Buffers db(2, kBytes);
  auto ha = a.pull_async("m", Version::latest(), da.tensors, {});
  auto hb = b.pull_async("m", Version::latest(), db.tensors, {});
  const auto ra = ha.result();
  const auto rb = hb.result();
  EXPECT_EQ(da.mismatches(3), 0u);
  EXPECT_EQ(db.mismatches(3), 0u);
  EXPECT_TRUE(ra.planned);
  EXPECT_TRUE(rb.planned);
  // K = 1: whichever planned second reads every stripe from the first (relay or not yet).
  EXPECT_EQ(ra.origin_bytes + rb.origin_bytes, 2 * kBytes) << "one copy from the publisher";
  EXPECT_EQ(ra.relay_bytes + rb.relay_bytes, 2 * kBytes);
}

TEST_F(LocalHubs, PlanModeOffAcquires) {
  auto& pub = add_hub();
  auto o = small_chunks();
  o.plan = false;
  auto& a = add_hub(o);
  Buffers src(1, kBytes);
  src.fill(2);
  pub.publish("m", 2, src.tensors, std::nullopt);
  Buffers da(1, kBytes);
  const auto r = a.pull("m", Version::latest(), da.tensors, {});
  EXPECT_EQ(da.mismatches(2), 0u);
  EXPECT_FALSE(r.planned);
  EXPECT_EQ(r.plan_calls, 0u);
}

}  // namespace
}  // namespace tensorhub::test
