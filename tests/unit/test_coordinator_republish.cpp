// Nothing committed is lost (issue 16): a publisher whose lease lapsed while a relay kept its
// version readable re-registers and re-publishes it (it was refused: "already published"), so
// that the version survives the relay's death; a re-publish that differs from the committed
// manifest is still refused (versions are immutable).
#include <memory>

#include "coord_test_util.hpp"

namespace tensorhub::coord {
namespace {

struct FakeTime {
  std::shared_ptr<Clock::time_point> now = std::make_shared<Clock::time_point>(Clock::now());
  void advance(std::chrono::milliseconds d) const { *now += d; }
};

CoordinatorConfig leased(const FakeTime& t) {
  CoordinatorConfig cfg;
  cfg.lease = 1000ms;
  cfg.slot_grace = 0ms;
  cfg.clock = [now = t.now] { return *now; };
  return cfg;
}

TEST(CoordinatorRepublish, AnOriginWhoseLeaseLapsedRepublishesWhileARelayHoldsTheVersion) {
  FakeTime t;
  Coordinator c(leased(t));
  const auto p = add_worker(c, "p");
  const auto r = add_worker(c, "r");
  const auto req = request(p, "m", 1, Group{"trainer", 1, 0}, {{"w", 3 * kChunk}});
  ASSERT_TRUE(c.publish(req).committed);
  resolve(c, r, "m");
  c.offer_relay(RelayOffer{r, "m", 1, {region(r, "w")}});
  complete_all(c, r, "m", 1, acquire(c, r, "m", 1, {0, 1, 2}).assignments, {0, 1, 2});
  // The publisher stalls past its lease; the relay keeps the version readable.
  t.advance(600ms);
  c.heartbeat(r);
  t.advance(600ms);
  c.heartbeat(r);
  EXPECT_THROW(c.heartbeat(p), UnknownWorker);
  ASSERT_EQ(c.latest("m"), std::optional<std::uint64_t>(1));
  // It registers again and re-publishes what it still holds.
  const auto p2 = add_worker(c, "p-again");
  auto again = req;
  again.worker = p2;
  again.regions = {region(p2, "w")};
  EXPECT_NO_THROW(c.publish(again));
  EXPECT_EQ(version_status(c, "m", 1)->origin_holders, 1u);
  // The relay dies: the version stays readable from its publisher.
  c.finish(FinishRequest{r, "m", 1, {"readers", 1, 0}, 1});
  c.deregister_worker(r);
  ASSERT_EQ(c.latest("m"), std::optional<std::uint64_t>(1));
  const auto q = add_worker(c, "q");
  resolve(c, q, "m", {"q", 1, 0});
  const auto got = acquire(c, q, "m", 1, {0, 1, 2});
  ASSERT_EQ(got.assignments.size(), 3u);
  for (const auto& a : got.assignments) EXPECT_EQ(a.holder, p2);
}

TEST(CoordinatorRepublish, ARepublishThatDiffersFromTheCommittedVersionIsRefused) {
  Coordinator c;
  const auto p = add_worker(c, "p");
  const auto req = request(p, "m", 1, Group{"trainer", 1, 0}, {{"w", 3 * kChunk}});
  ASSERT_TRUE(c.publish(req).committed);
  EXPECT_THROW(c.publish(req), UserError) << "the same worker again";
  // Identical bytes from another worker while the origin lives: refused too (one origin a shard).
  auto twin = req;
  twin.worker = add_worker(c, "twin");
  EXPECT_THROW(c.publish(twin), UserError);
  const auto other = add_worker(c, "other");
  auto changed = req;
  changed.worker = other;
  changed.shard.checksums[0][1] ^= 1;  // other bytes under the same version number
  EXPECT_THROW(c.publish(changed), UserError);
  auto bigger = request(other, "m", 1, Group{"trainer", 1, 0}, {{"w", 4 * kChunk}});
  EXPECT_THROW(c.publish(bigger), UserError);
  EXPECT_EQ(version_status(c, "m", 1)->origin_holders, 1u);
}

}  // namespace
}  // namespace tensorhub::coord
