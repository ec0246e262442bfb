// Coordinator: reading groups, acquire (assignments, limits), relaying readers, lost holders, status.
#include "coord_test_util.hpp"

namespace tensorhub::coord {
namespace {

using namespace std::chrono_literals;

// ---- reading groups --------------------------------------------------------------------------

TEST(Coordinator, AReadingGroupResolvesOnceForAllItsRanks) {
  Coordinator c;
  const auto p = add_worker(c, "p");
  const auto r0 = add_worker(c, "r0");
  const auto r1 = add_worker(c, "r1");
  publish_one(c, p, "m", 1);
  EXPECT_EQ(resolve(c, r0, "m", {"tp", 2, 0}, 0).manifest->version, 1u);
  publish_one(c, p, "m", 2);
  ASSERT_EQ(c.latest("m"), 2u);
  // Same group, same pull number: the version the group already resolved.
  EXPECT_EQ(resolve(c, r1, "m", {"tp", 2, 1}, 0).manifest->version, 1u);
  // The next pull, or another group, sees the newer version.
  EXPECT_EQ(resolve(c, r0, "m", {"tp", 2, 0}, 1).manifest->version, 2u);
  EXPECT_EQ(resolve(c, r0, "m", {"other", 1, 0}, 0).manifest->version, 2u);
}

TEST(Coordinator, ReadingGroupRankAskingForAnotherVersionIsUserError) {
  Coordinator c;
  const auto p = add_worker(c, "p");
  const auto r0 = add_worker(c, "r0");
  const auto r1 = add_worker(c, "r1");
  publish_one(c, p, "m", 1);
  publish_one(c, p, "m", 2);
  EXPECT_EQ(resolve(c, r0, "m", {"tp", 2, 0}, 0, 1).manifest->version, 1u);
  EXPECT_THROW(resolve(c, r1, "m", {"tp", 2, 1}, 0, 2), UserError);
  // r1 gave up pull #1 (its share of the pin went with it); its next resolve is pull #2.
  const auto next = resolve(c, r1, "m", {"tp", 2, 1}, 0, 1);
  EXPECT_EQ(next.manifest->version, 1u);
  EXPECT_EQ(next.seq, 2u);
}

TEST(Coordinator, ResolveRejectsBadGroups) {
  Coordinator c;
  const auto p = add_worker(c, "p");
  publish_one(c, p, "m", 1);
  EXPECT_THROW(resolve(c, p, "m", {"g", 0, 0}), UserError);
  EXPECT_THROW(resolve(c, p, "m", {"g", 2, 2}), UserError);
  EXPECT_THROW(resolve(c, 12345, "m"), NotFoundError);  // unregistered reader
}

// ---- acquire: assignments and limits ---------------------------------------------------------

TEST(Coordinator, AcquireAssignsTheHolderRegionAndOffset) {
  Coordinator c;
  const auto p0 = add_worker(c, "p0");
  const auto p1 = add_worker(c, "p1");
  const auto r = add_worker(c, "r");
  c.publish(request(p0, "m", 1, {"trainer", 2, 0}, {{"a", 2 * kChunk + 1}}));  // chunks 0..2
  c.publish(request(p1, "m", 1, {"trainer", 2, 1}, {{"b", kChunk}}));          // chunk 3
  const auto reply = acquire(c, r, "m", 1, {3, 2, 0});
  EXPECT_TRUE(reply.unavailable.empty());
  ASSERT_EQ(reply.assignments.size(), 3u);
  // In the order asked for.
  EXPECT_EQ(reply.assignments[0].chunk, 3u);
  EXPECT_EQ(reply.assignments[0].holder, p1);
  EXPECT_EQ(reply.assignments[0].endpoint, "local:p1");
  EXPECT_EQ(reply.assignments[0].region, region(p1, "b"));
  EXPECT_EQ(reply.assignments[0].offset, 0u);
  EXPECT_TRUE(reply.assignments[0].origin);
  EXPECT_EQ(reply.assignments[1].chunk, 2u);
  EXPECT_EQ(reply.assignments[1].holder, p0);
  EXPECT_EQ(reply.assignments[1].endpoint, "local:p0");
  EXPECT_EQ(reply.assignments[1].region, region(p0, "a"));
  EXPECT_EQ(reply.assignments[1].offset, 2 * kChunk);
  EXPECT_EQ(reply.assignments[2].chunk, 0u);
  EXPECT_EQ(reply.assignments[2].offset, 0u);
  EXPECT_THROW(acquire(c, r, "m", 1, {4}), UserError);  // out of range
}

TEST(Coordinator, AcquireHonoursMaxAssign) {
  Coordinator c(CoordinatorConfig{2, 3});
  const auto p = add_worker(c, "p");
  const auto r = add_worker(c, "r");
  publish_one(c, p, "m", 1, 8 * kChunk);
  EXPECT_EQ(acquire(c, r, "m", 1, {0, 1, 2, 3}, 2).assignments.size(), 2u);
  // Capped by the coordinator's max_assign_per_call.
  EXPECT_EQ(acquire(c, r, "m", 1, {4, 5, 6, 7}, 16).assignments.size(), 3u);
  EXPECT_EQ(version_status(c, "m", 1)->pins, 5u);
}

TEST(Coordinator, AcquireRespectsMaxReadersPerSource) {
  Coordinator c(CoordinatorConfig{1, 64});
  const auto p = add_worker(c, "p");
  const auto r1 = add_worker(c, "r1");
  const auto r2 = add_worker(c, "r2");
  publish_one(c, p, "m", 1, 4 * kChunk);

  const auto first = acquire(c, r1, "m", 1, {0});
  ASSERT_EQ(first.assignments.size(), 1u);
  // p serves r1 (K=1): r2 has to wait; the chunk is busy, not lost.
  const auto blocked = acquire(c, r2, "m", 1, {0, 1});
  EXPECT_TRUE(blocked.assignments.empty());
  EXPECT_TRUE(blocked.unavailable.empty());
  // r1 itself may read more from the holder that already serves it.
  const auto more = acquire(c, r1, "m", 1, {1, 2});
  EXPECT_EQ(more.assignments.size(), 2u);
  EXPECT_TRUE(acquire(c, r2, "m", 1, {0}).assignments.empty());
  // Once r1 has finished every read, r2 gets its turn.
  complete_all(c, r1, "m", 1, first.assignments);
  EXPECT_TRUE(acquire(c, r2, "m", 1, {0}).assignments.empty());  // r1 still has 2 reads
  complete_all(c, r1, "m", 1, more.assignments);
  const auto now = acquire(c, r2, "m", 1, {0});
  ASSERT_EQ(now.assignments.size(), 1u);
  EXPECT_EQ(now.assignments[0].holder, p);
}

TEST(Coordinator, AcquireWithTwoReadersPerSource) {
  Coordinator c(CoordinatorConfig{2, 64});
  const auto p = add_worker(c, "p");
  const auto r1 = add_worker(c, "r1");
  const auto r2 = add_worker(c, "r2");
  const auto r3 = add_worker(c, "r3");
  publish_one(c, p, "m", 1);
  EXPECT_EQ(acquire(c, r1, "m", 1, {0}).assignments.size(), 1u);
  EXPECT_EQ(acquire(c, r2, "m", 1, {0}).assignments.size(), 1u);
  EXPECT_TRUE(acquire(c, r3, "m", 1, {0}).assignments.empty());
}

TEST(Coordinator, CompleteOfAReadThatWasNotAssignedIsAUserError) {
  Coordinator c;
  const auto p = add_worker(c, "p");
  const auto r = add_worker(c, "r");
  const auto q = add_worker(c, "q");
  publish_one(c, p, "m", 1);
  EXPECT_THROW(c.complete(CompleteRequest{r, "m", 1, {ChunkResult{0, p, true}}, {}}), UserError);
  EXPECT_THROW(c.complete(CompleteRequest{r, "m", 1, {ChunkResult{0, q, true}}, {}}), UserError);  // holds nothing
}

// ---- relaying readers ------------------------------------------------------------------------

TEST(Coordinator, RelayingReaderServesWhenTheOriginIsBusy) {
  Coordinator c(CoordinatorConfig{1, 64});
  const auto p = add_worker(c, "p");
  const auto a = add_worker(c, "a");
  const auto b = add_worker(c, "b");
  publish_one(c, p, "m", 1, 3 * kChunk);

  c.offer_relay(RelayOffer{a, "m", 1, {region(a, "w")}});
  const auto first = acquire(c, a, "m", 1, {0});
  ASSERT_EQ(first.assignments.size(), 1u);
  ASSERT_EQ(first.assignments[0].holder, p);
  complete_all(c, a, "m", 1, first.assignments, /*now_held=*/{0});
  // a now reads chunk 1 from p, which keeps the origin busy (K=1).
  const auto second = acquire(c, a, "m", 1, {1});
  ASSERT_EQ(second.assignments.size(), 1u);
  ASSERT_EQ(second.assignments[0].holder, p);

  const auto fromA = acquire(c, b, "m", 1, {0});
  ASSERT_EQ(fromA.assignments.size(), 1u);
  EXPECT_EQ(fromA.assignments[0].holder, a);
  EXPECT_FALSE(fromA.assignments[0].origin);
  EXPECT_EQ(fromA.assignments[0].endpoint, "local:a");
  EXPECT_EQ(fromA.assignments[0].region, region(a, "w"));
  EXPECT_EQ(fromA.assignments[0].offset, 0u);
  // Chunk 1: a does not have it yet and p is busy: wait.
  const auto wait = acquire(c, b, "m", 1, {1});
  EXPECT_TRUE(wait.assignments.empty());
  EXPECT_TRUE(wait.unavailable.empty());
}

TEST(Coordinator, RelayIsPreferredOverTheOriginOnTies) {
  Coordinator c;  // K=2
  const auto p = add_worker(c, "p");
  const auto a = add_worker(c, "a");
  const auto b = add_worker(c, "b");
  publish_one(c, p, "m", 1, 2 * kChunk);
  c.offer_relay(RelayOffer{a, "m", 1, {region(a, "w")}});
  const auto got = acquire(c, a, "m", 1, {0, 1});
  ASSERT_EQ(got.assignments.size(), 2u);
  complete_all(c, a, "m", 1, got.assignments, {0, 1});
  EXPECT_EQ(version_status(c, "m", 1)->holders, 2u);

  const auto reply = acquire(c, b, "m", 1, {0, 1});
  ASSERT_EQ(reply.assignments.size(), 2u);
  for (const auto& x : reply.assignments) {
    EXPECT_EQ(x.holder, a);
    EXPECT_FALSE(x.origin);
    EXPECT_EQ(x.offset, x.chunk * kChunk);
  }
}

TEST(Coordinator, RelayChunksCountOnlyOnceReported) {
  Coordinator c;
  const auto p = add_worker(c, "p");
  const auto a = add_worker(c, "a");
  const auto b = add_worker(c, "b");
  publish_one(c, p, "m", 1, 2 * kChunk);
  c.offer_relay(RelayOffer{a, "m", 1, {region(a, "w")}});
  // a offered its buffer but holds nothing yet: b reads from the origin.
  const auto reply = acquire(c, b, "m", 1, {0});
  ASSERT_EQ(reply.assignments.size(), 1u);
  EXPECT_EQ(reply.assignments[0].holder, p);
}

TEST(Coordinator, RelayOfferAndReportValidation) {
  Coordinator c;
  const auto p = add_worker(c, "p");
  const auto a = add_worker(c, "a");
  const auto b = add_worker(c, "b");
  publish_one(c, p, "m", 1);
  EXPECT_THROW(c.offer_relay(RelayOffer{a, "m", 1, {}}), UserError);  // one slot per tensor
  c.offer_relay(RelayOffer{a, "m", 1, {region(a, "w")}});
  EXPECT_NO_THROW(c.offer_relay(RelayOffer{a, "m", 1, {region(a, "w")}}));          // merged (nothing new)
  EXPECT_THROW(c.offer_relay(RelayOffer{p, "m", 1, {region(p, "w")}}), UserError);  // the origin
  // Reporting held chunks without an offer.
  EXPECT_THROW(c.complete(CompleteRequest{b, "m", 1, {}, {0}}), UserError);
  EXPECT_THROW(c.complete(CompleteRequest{a, "m", 1, {}, {99}}), UserError);
}

// ---- lost holders ----------------------------------------------------------------------------

TEST(Coordinator, WithdrawnHolderStillServesPullsResolvedBeforeTheWithdrawal) {
  Coordinator c;
  const auto p = add_worker(c, "p");
  const auto r = add_worker(c, "r");
  const auto late = add_worker(c, "late");
  publish_one(c, p, "m", 1, 3 * kChunk);
  ASSERT_EQ(resolve(c, r, "m").manifest->chunks.size(), 3u);
  EXPECT_EQ(c.unpublish(p, "m", 1), 1u);  // the resolved reading group still pins it
  // The pull that was promised the version before unpublish is still served...
  const auto reply = acquire(c, r, "m", 1, {0, 1, 2});
  EXPECT_EQ(reply.assignments.size(), 3u);
  EXPECT_TRUE(reply.unavailable.empty());
  // ...but nobody can start a new pull of it.
  EXPECT_THROW(resolve(c, late, "m", {"late-group", 1, 0}), NotFoundError);
  EXPECT_EQ(c.latest("m"), std::nullopt);
}

TEST(Coordinator, AcquireReportsUnavailableWhenTheOnlyHolderLeft) {
  Coordinator c;
  const auto p = add_worker(c, "p");
  const auto r = add_worker(c, "r");
  publish_one(c, p, "m", 1, 3 * kChunk);
  ASSERT_EQ(resolve(c, r, "m").manifest->chunks.size(), 3u);
  c.deregister_worker(p);  // the holder is gone
  const auto reply = acquire(c, r, "m", 1, {0, 1, 2});
  EXPECT_TRUE(reply.assignments.empty());
  EXPECT_EQ(reply.unavailable, (std::vector<std::uint32_t>{0, 1, 2}));
  EXPECT_EQ(c.latest("m"), std::nullopt);
  EXPECT_THROW(resolve(c, r, "m", {"readers", 1, 0}, 1, 1), NotFoundError);
}

TEST(Coordinator, DeregisteringAWorkerWithdrawsWhatItHolds) {
  Coordinator c;
  const auto p = add_worker(c, "p");
  const auto q = add_worker(c, "q");
  const auto r = add_worker(c, "r");
  c.publish(request(p, "m", 1, {"trainer", 2, 0}, {{"a", 10}}));
  c.publish(request(q, "m", 1, {"trainer", 2, 1}, {{"b", 10}}));
  ASSERT_EQ(c.latest("m"), 1u);
  c.deregister_worker(q);
  EXPECT_EQ(c.latest("m"), std::nullopt);
  const auto reply = acquire(c, r, "m", 1, {0, 1});
  ASSERT_EQ(reply.assignments.size(), 1u);
  EXPECT_EQ(reply.assignments[0].holder, p);
  EXPECT_EQ(reply.unavailable, std::vector<std::uint32_t>{1});
}

TEST(Coordinator, StatusCountsHoldersPinsAndBytes) {
  Coordinator c;
  const auto p = add_worker(c, "p");
  const auto r = add_worker(c, "r");
  add_worker(c, "r2");  // the group's third member (registered, not yet resolved)
  publish_one(c, p, "m", 1, 5000);
  publish_one(c, p, "n", 4, 10);
  resolve(c, r, "m", {"g", 3, 0}, 0);
  acquire(c, r, "m", 1, {0});
  const auto all = c.status();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].model, "m");
  EXPECT_EQ(all[1].model, "n");
  const auto st = version_status(c, "m", 1);
  ASSERT_TRUE(st.has_value());
  EXPECT_EQ(st->version, 1u);
  EXPECT_TRUE(st->committed);
  EXPECT_TRUE(st->readable);
  EXPECT_EQ(st->holders, 1u);
  EXPECT_EQ(st->origin_holders, 1u);
  EXPECT_EQ(st->pins, 3u + 1u);  // group of 3 + one read
  EXPECT_EQ(st->bytes, 5000u);
  EXPECT_EQ(st->retained, 0u);
}

}  // namespace
}  // namespace tensorhub::coord
