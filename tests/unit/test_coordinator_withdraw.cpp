// Coordinator: withdrawing references without losing reads: workers that leave, deferred
// withdrawals of an unsynchronised publishing group, withdrawn relays, relay offers that merge.
#include "coord_test_util.hpp"

namespace tensorhub::coord {
namespace {

// Regression: a reader that deregistered with reads in flight kept their pins, and the holder's
// unpublish waited for them for ever.
TEST(CoordinatorWithdraw, AReaderThatLeavesReleasesThePinsOfItsReads) {
  Coordinator c;
  const auto p = add_worker(c, "p");
  const auto r = add_worker(c, "r");
  publish_one(c, p, "m", 1, 3 * kChunk);
  ASSERT_EQ(acquire(c, r, "m", 1, {0, 1, 2}).assignments.size(), 3u);
  c.deregister_worker(r);
  EXPECT_EQ(c.unpublish(p, "m", 1), 0u);
  EXPECT_EQ(c.wait_drained(p, "m", 1, 0ms), 0u);
}

TEST(CoordinatorWithdraw, AReaderThatLeavesMidPullReleasesItsGroupPin) {
  Coordinator c;
  const auto p = add_worker(c, "p");
  const auto r = add_worker(c, "r");
  publish_one(c, p, "m", 1, 3 * kChunk);
  resolve(c, r, "m");
  ASSERT_EQ(acquire(c, r, "m", 1, {0}).assignments.size(), 1u);
  c.deregister_worker(r);
  EXPECT_EQ(c.unpublish(p, "m", 1), 0u);
}

// A holder that leaves cleanly with a read in flight: its reference is withdrawn (no new reads),
// the read drains, then the reference is forgotten and the version dropped.
TEST(CoordinatorWithdraw, AHolderThatLeavesIsForgottenOnceItsReadsDrain) {
  Coordinator c;
  const auto p = add_worker(c, "p");
  const auto r = add_worker(c, "r");
  const auto q = add_worker(c, "q");
  publish_one(c, p, "m", 1, 2 * kChunk);
  const auto got = acquire(c, r, "m", 1, {0});
  ASSERT_EQ(got.assignments.size(), 1u);
  c.deregister_worker(p);
  const auto st = version_status(c, "m", 1);
  ASSERT_TRUE(st.has_value());
  ASSERT_EQ(st->holder_list.size(), 1u);
  EXPECT_TRUE(st->holder_list[0].withdrawn);
  EXPECT_EQ(acquire(c, q, "m", 1, {1}).unavailable, std::vector<std::uint32_t>{1});
  complete_all(c, r, "m", 1, got.assignments);
  EXPECT_FALSE(version_status(c, "m", 1).has_value());
}

// Regression: two publishers, each publish(v); unpublish(v-1) without barriers. The fast one's
// unpublish of v1 while v2 was pending made the model unreadable until v2 committed.
TEST(CoordinatorWithdraw, UnpublishWhileANewerVersionIsPendingIsDeferredUntilItCommits) {
  Coordinator c;
  const auto p0 = add_worker(c, "p0");
  const auto p1 = add_worker(c, "p1");
  const auto r = add_worker(c, "r");
  c.publish(request(p0, "m", 1, {"trainer", 2, 0}, {{"a", kChunk}}));
  c.publish(request(p1, "m", 1, {"trainer", 2, 1}, {{"b", kChunk}}));
  c.publish(request(p0, "m", 2, {"trainer", 2, 0}, {{"a", kChunk}}));  // v2 pending
  EXPECT_GT(c.unpublish(p0, "m", 1), 0u);
  EXPECT_EQ(c.latest("m"), 1u);  // no gap
  EXPECT_GT(c.wait_drained(p0, "m", 1, 0ms), 0u);
  EXPECT_EQ(resolve(c, r, "m").manifest->version, 1u);
  EXPECT_EQ(acquire(c, r, "m", 1, {0}).assignments.size(), 1u);  // p0 still serves v1
  EXPECT_TRUE(c.publish(request(p1, "m", 2, {"trainer", 2, 1}, {{"b", kChunk}})).committed);
  EXPECT_EQ(c.latest("m"), 2u);
  EXPECT_EQ(c.wait_drained(p0, "m", 1, 0ms), 2u);  // now withdrawn: r's read and group pin remain
  EXPECT_EQ(c.unpublish(p1, "m", 1), 1u);          // v1 is not the newest: withdrawn at once
}

TEST(CoordinatorWithdraw, ADeferredWithdrawalEndsWhenThePendingShardsAreDropped) {
  Coordinator c;
  const auto p0 = add_worker(c, "p0");
  const auto p1 = add_worker(c, "p1");
  c.publish(request(p0, "m", 1, {"trainer", 2, 0}, {{"a", kChunk}}));
  c.publish(request(p1, "m", 1, {"trainer", 2, 1}, {{"b", kChunk}}));
  c.publish(request(p0, "m", 2, {"trainer", 2, 0}, {{"a", kChunk}}));
  EXPECT_EQ(c.unpublish(p0, "m", 1), 1u);
  EXPECT_EQ(c.unpublish(p0, "m", 2), 0u);  // drops the pending shard
  EXPECT_EQ(c.wait_drained(p0, "m", 1, 0ms), 0u);
  EXPECT_EQ(c.latest("m"), std::nullopt);

  // Its publisher left: the same.
  const auto q = add_worker(c, "q");
  publish_one(c, q, "n", 1);
  c.publish(request(p1, "n", 2, {"trainer", 2, 0}, {{"w", kChunk}}));
  EXPECT_EQ(c.unpublish(q, "n", 1), 1u);
  c.deregister_worker(p1);
  EXPECT_EQ(c.wait_drained(q, "n", 1, 0ms), 0u);
}

// Regression: a version resolved while only a relay held its chunks failed mid-pull when the
// relay withdrew (its owner pulled the next version into the same buffers).
TEST(CoordinatorWithdraw, AWithdrawnRelayServesPullsResolvedBeforeItWithdrew) {
  Coordinator c;
  const auto p = add_worker(c, "p");
  const auto a = add_worker(c, "a");
  const auto b = add_worker(c, "b");
  const auto late = add_worker(c, "late");
  publish_one(c, p, "m", 1, 2 * kChunk);
  const auto ra = resolve(c, a, "m", {"ga", 1, 0});
  c.offer_relay(RelayOffer{a, "m", 1, {region(a, "w")}});
  const auto got = acquire(c, a, "m", 1, {0, 1});
  ASSERT_EQ(got.assignments.size(), 2u);
  complete_all(c, a, "m", 1, got.assignments, {0, 1});
  c.finish(FinishRequest{a, "m", 1, {"ga", 1, 0}, ra.seq});
  EXPECT_EQ(c.unpublish(p, "m", 1), 0u);
  EXPECT_EQ(c.wait_drained(p, "m", 1, 0ms), 0u);  // only the relay holds v1 now
  const auto rb = resolve(c, b, "m", {"gb", 1, 0});
  EXPECT_EQ(c.unpublish(a, "m", 1), 1u);  // b's pull still runs
  const auto reply = acquire(c, b, "m", 1, {0, 1});
  EXPECT_TRUE(reply.unavailable.empty());
  ASSERT_EQ(reply.assignments.size(), 2u);
  EXPECT_EQ(reply.assignments[0].holder, a);
  EXPECT_THROW(resolve(c, late, "m", {"gl", 1, 0}), NotFoundError);  // no new pull of it
  EXPECT_TRUE(acquire(c, late, "m", 1, {0}).assignments.empty());
  EXPECT_EQ(c.wait_drained(a, "m", 1, 0ms), 3u);  // two reads in flight, b's pull
  complete_all(c, b, "m", 1, reply.assignments);
  EXPECT_EQ(c.wait_drained(a, "m", 1, 0ms), 1u);  // until b's pull finishes
  c.finish(FinishRequest{b, "m", 1, {"gb", 1, 0}, rb.seq});
  EXPECT_EQ(c.wait_drained(a, "m", 1, 0ms), 0u);
}

// Regression: a reader pulling one version in two calls (into different buffers) could not offer
// its second buffers as a relay.
TEST(CoordinatorWithdraw, ASecondRelayOfferOfTheSameVersionMerges) {
  Coordinator c;
  const auto p = add_worker(c, "p");
  const auto r = add_worker(c, "r");
  const auto q = add_worker(c, "q");
  c.publish(request(p, "m", 1, {"trainer", 1, 0}, {{"a", kChunk}, {"b", kChunk}}));  // chunk 0: a, 1: b
  c.offer_relay(RelayOffer{r, "m", 1, {region(r, "a"), ""}});
  const auto first = acquire(c, r, "m", 1, {0});
  complete_all(c, r, "m", 1, first.assignments, {0});
  EXPECT_NO_THROW(c.offer_relay(RelayOffer{r, "m", 1, {"other-buffer-for-a", region(r, "b")}}));
  const auto second = acquire(c, r, "m", 1, {1});
  complete_all(c, r, "m", 1, second.assignments, {1});
  // q reads both chunks from r (a relay is preferred on ties): a from its first region.
  const auto fromR = acquire(c, q, "m", 1, {0, 1});
  ASSERT_EQ(fromR.assignments.size(), 2u);
  EXPECT_EQ(fromR.assignments[0].holder, r);
  EXPECT_EQ(fromR.assignments[0].region, region(r, "a"));
  EXPECT_EQ(fromR.assignments[1].holder, r);
  EXPECT_EQ(fromR.assignments[1].region, region(r, "b"));
  EXPECT_THROW(c.offer_relay(RelayOffer{p, "m", 1, {region(p, "a"), ""}}), UserError);  // the origin
}

}  // namespace
}  // namespace tensorhub::coord
