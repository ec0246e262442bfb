// Coordinator: registration, publishing and commit, unpublish/pins/draining, retain, wait_for.
#include "coord_test_util.hpp"

namespace tensorhub::coord {
namespace {

using namespace std::chrono_literals;

// ---- registration and publishing -------------------------------------------------------------

TEST(Coordinator, RejectsAZeroReaderLimit) { EXPECT_THROW(Coordinator(CoordinatorConfig{0, 64}), UserError); }

TEST(Coordinator, RegistrationNeedsAnEndpointAndGivesDistinctIds) {
  Coordinator c;
  EXPECT_THROW(c.register_worker(WorkerInfo{}), UserError);
  const auto a = add_worker(c, "a");
  const auto b = add_worker(c, "b");
  EXPECT_NE(a, 0u);
  EXPECT_NE(a, b);
  c.deregister_worker(a);
  EXPECT_THROW(c.deregister_worker(a), NotFoundError);
}

TEST(Coordinator, TwoShardGroupCommitsOnlyAfterBothShards) {
  Coordinator c;
  const auto r0 = add_worker(c, "tp0");
  const auto r1 = add_worker(c, "tp1");
  const Group g0{"trainer", 2, 0};
  const Group g1{"trainer", 2, 1};

  EXPECT_FALSE(c.publish(request(r0, "m", 1, g0, {{"a", 5000}})).committed);
  EXPECT_EQ(c.latest("m"), std::nullopt);
  auto st = version_status(c, "m", 1);
  ASSERT_TRUE(st.has_value());
  EXPECT_FALSE(st->committed);
  EXPECT_FALSE(st->readable);
  const auto reader = add_worker(c, "reader");
  EXPECT_THROW(resolve(c, reader, "m", {"readers", 1, 0}, 0, 1), NotFoundError);
  EXPECT_THROW(c.retain("m", 1), UserError);

  EXPECT_TRUE(c.publish(request(r1, "m", 1, g1, {{"b", 100}})).committed);
  EXPECT_EQ(c.latest("m"), 1u);
  st = version_status(c, "m", 1);
  ASSERT_TRUE(st.has_value());
  EXPECT_TRUE(st->committed);
  EXPECT_TRUE(st->readable);
  EXPECT_EQ(st->holders, 2u);
  EXPECT_EQ(st->origin_holders, 2u);
  EXPECT_EQ(st->bytes, 5100u);

  // The assembled manifest has both shards in shard order.
  const auto m = *resolve(c, reader, "m").manifest;
  EXPECT_EQ(m.version, 1u);
  EXPECT_EQ(m.num_shards, 2u);
  ASSERT_EQ(m.tensors.size(), 2u);
  EXPECT_EQ(m.tensors[0].spec.name, "a");
  EXPECT_EQ(m.tensors[1].spec.name, "b");
  EXPECT_EQ(m.tensors[1].shard, 1u);
}

TEST(Coordinator, ShardsMayArriveInAnyOrder) {
  Coordinator c;
  const auto r0 = add_worker(c, "tp0");
  const auto r1 = add_worker(c, "tp1");
  EXPECT_FALSE(c.publish(request(r1, "m", 1, {"trainer", 2, 1}, {{"b", 100}})).committed);
  EXPECT_TRUE(c.publish(request(r0, "m", 1, {"trainer", 2, 0}, {{"a", 100}})).committed);
  EXPECT_EQ(c.latest("m"), 1u);
}

TEST(Coordinator, LatestIgnoresUncommittedVersions) {
  Coordinator c;
  const auto p = add_worker(c, "p");
  const auto q = add_worker(c, "q");
  EXPECT_EQ(c.latest("m"), std::nullopt);
  ASSERT_TRUE(publish_one(c, p, "m", 1).committed);
  // v2 is published by a two-rank group of which only one rank has published.
  ASSERT_FALSE(c.publish(request(q, "m", 2, {"trainer", 2, 0}, {{"w", 100}})).committed);
  EXPECT_EQ(c.latest("m"), 1u);
  const auto reader = add_worker(c, "r");
  EXPECT_EQ(resolve(c, reader, "m").manifest->version, 1u);
}

TEST(Coordinator, LatestIsTheHighestVersionNotTheLastPublished) {
  Coordinator c;
  const auto p = add_worker(c, "p");
  publish_one(c, p, "m", 5);
  publish_one(c, p, "m", 3);
  EXPECT_EQ(c.latest("m"), 5u);
  EXPECT_EQ(c.latest("other"), std::nullopt);
}

TEST(Coordinator, PublishingTheSameShardTwiceIsUserError) {
  Coordinator c;
  const auto a = add_worker(c, "a");
  const auto b = add_worker(c, "b");
  const auto d = add_worker(c, "d");
  // While pending: same rank again, from the same or from another worker.
  ASSERT_FALSE(c.publish(request(a, "m", 1, {"trainer", 2, 0}, {{"x", 100}})).committed);
  EXPECT_THROW(c.publish(request(a, "m", 1, {"trainer", 2, 0}, {{"x", 100}})), UserError);
  EXPECT_THROW(c.publish(request(d, "m", 1, {"trainer", 2, 0}, {{"x", 100}})), UserError);
  // The failed attempts did not break the pending version.
  ASSERT_TRUE(c.publish(request(b, "m", 1, {"trainer", 2, 1}, {{"y", 100}})).committed);
  // Committed versions are immutable.
  EXPECT_THROW(c.publish(request(b, "m", 1, {"trainer", 2, 1}, {{"y", 100}})), UserError);
  EXPECT_THROW(c.publish(request(d, "m", 1, {"trainer", 2, 0}, {{"x", 100}})), UserError);
  EXPECT_EQ(c.latest("m"), 1u);
}

TEST(Coordinator, PublishValidatesTheRequest) {
  Coordinator c;
  const auto a = add_worker(c, "a");
  const auto b = add_worker(c, "b");
  EXPECT_THROW(publish_one(c, 999, "m", 1), NotFoundError);  // unregistered worker
  EXPECT_THROW(publish_one(c, a, "", 1), UserError);
  EXPECT_THROW(c.publish(request(a, "m", 1, {"trainer", 0, 0}, {{"w", 10}})), UserError);
  auto wrong_rank = request(a, "m", 1, {"trainer", 2, 1}, {{"w", 10}});
  wrong_rank.shard.shard = 0;
  EXPECT_THROW(c.publish(wrong_rank), UserError);
  auto missing_region = request(a, "m", 1, {"trainer", 1, 0}, {{"w", 10}});
  missing_region.regions.clear();
  EXPECT_THROW(c.publish(missing_region), UserError);
  auto bad_chunk = request(a, "m", 1, {"trainer", 1, 0}, {{"w", 10}});
  bad_chunk.chunk_bytes = 10;
  EXPECT_THROW(c.publish(bad_chunk), UserError);
  // Failed first publishes leave nothing behind.
  EXPECT_TRUE(c.status().empty());

  // Shards of one version must agree on group and chunk size.
  ASSERT_FALSE(c.publish(request(a, "m", 1, {"trainer", 2, 0}, {{"x", 10}})).committed);
  EXPECT_THROW(c.publish(request(b, "m", 1, {"other", 2, 1}, {{"y", 10}})), UserError);
  EXPECT_THROW(c.publish(request(b, "m", 1, {"trainer", 3, 1}, {{"y", 10}})), UserError);
  auto other_chunk = request(b, "m", 1, {"trainer", 2, 1}, {{"y", 10}});
  other_chunk.chunk_bytes = 2 * kChunk;
  other_chunk.shard.checksums = {{1}};
  EXPECT_THROW(c.publish(other_chunk), UserError);
  // One worker cannot publish two shards of a version.
  EXPECT_THROW(c.publish(request(a, "m", 1, {"trainer", 2, 1}, {{"y", 10}})), UserError);
  // A tensor name clash across shards is caught at commit, and the rank may publish again.
  EXPECT_THROW(c.publish(request(b, "m", 1, {"trainer", 2, 1}, {{"x", 10}})), UserError);
  EXPECT_EQ(c.latest("m"), std::nullopt);
  EXPECT_TRUE(c.publish(request(b, "m", 1, {"trainer", 2, 1}, {{"y", 10}})).committed);
}

TEST(Coordinator, UnknownModelOrVersionIsNotFound) {
  Coordinator c;
  const auto p = add_worker(c, "p");
  const auto r = add_worker(c, "r");
  publish_one(c, p, "m", 1);

  EXPECT_THROW(resolve(c, r, "nope"), NotFoundError);
  EXPECT_THROW(resolve(c, r, "m", {"readers", 1, 0}, 0, 2), NotFoundError);
  EXPECT_THROW(c.retain("nope", 1), NotFoundError);
  EXPECT_THROW(c.retain("m", 2), NotFoundError);
  EXPECT_THROW(c.release("m", 2), NotFoundError);
  EXPECT_THROW(c.unpublish(p, "nope", 1), NotFoundError);
  EXPECT_THROW(c.unpublish(p, "m", 2), NotFoundError);
  EXPECT_THROW(acquire(c, r, "m", 2, {0}), NotFoundError);
  EXPECT_THROW(c.offer_relay(RelayOffer{r, "m", 2, {""}}), NotFoundError);
  EXPECT_THROW(c.complete(CompleteRequest{r, "nope", 1, {}, {}}), NotFoundError);
  // The error for an unknown version lists the known ones.
  try {
    resolve(c, r, "m", {"readers", 1, 0}, 0, 7);
    FAIL() << "expected NotFoundError";
  } catch (const NotFoundError& e) {
    EXPECT_NE(std::string(e.what()).find("known versions: 1"), std::string::npos) << e.what();
  }
}

// ---- unpublish, pins, draining ---------------------------------------------------------------

TEST(Coordinator, UnpublishOfSomethingNotPublishedIsNotFound) {
  Coordinator c;
  const auto p = add_worker(c, "p");
  const auto other = add_worker(c, "other");
  publish_one(c, p, "m", 1);
  EXPECT_THROW(c.unpublish(other, "m", 1), NotFoundError);  // published, but not by this worker
  EXPECT_THROW(c.unpublish(p, "m", 9), NotFoundError);
  EXPECT_THROW(c.unpublish(p, "x", 1), NotFoundError);
  EXPECT_EQ(c.latest("m"), 1u);  // nothing changed
}

TEST(Coordinator, UnpublishReturnsPinsAndWaitDrainedReturnsZeroAfterComplete) {
  Coordinator c;
  const auto p = add_worker(c, "p");
  const auto r = add_worker(c, "r");
  publish_one(c, p, "m", 1, 3 * kChunk);

  const auto reply = acquire(c, r, "m", 1, {0, 1});
  ASSERT_EQ(reply.assignments.size(), 2u);
  EXPECT_EQ(version_status(c, "m", 1)->pins, 2u);

  EXPECT_EQ(c.unpublish(p, "m", 1), 2u);
  // Withdrawn: not readable, and no new reads are assigned.
  EXPECT_EQ(c.latest("m"), std::nullopt);
  const auto after = acquire(c, r, "m", 1, {2});
  EXPECT_TRUE(after.assignments.empty());
  EXPECT_EQ(after.unavailable, std::vector<std::uint32_t>{2});
  EXPECT_EQ(c.wait_drained(p, "m", 1, 1ms), 2u);

  complete_all(c, r, "m", 1, {reply.assignments[0]});
  EXPECT_EQ(c.unpublish(p, "m", 1), 1u);  // unpublishing again just reports
  complete_all(c, r, "m", 1, {reply.assignments[1]});
  EXPECT_EQ(c.wait_drained(p, "m", 1, kLongWait), 0u);
  // Drained and last holder gone: the version is forgotten.
  EXPECT_EQ(version_status(c, "m", 1), std::nullopt);
  EXPECT_THROW(c.unpublish(p, "m", 1), NotFoundError);
  EXPECT_EQ(c.wait_drained(p, "m", 1, 1ms), 0u);
}

TEST(Coordinator, UnpublishWithoutReadersDrainsAtOnce) {
  Coordinator c;
  const auto p = add_worker(c, "p");
  publish_one(c, p, "m", 1);
  EXPECT_EQ(c.unpublish(p, "m", 1), 0u);
  EXPECT_EQ(c.wait_drained(p, "m", 1, 0ms), 0u);
  EXPECT_TRUE(c.status().empty());
}

TEST(Coordinator, WaitDrainedTimesOutWhileAReadIsPinned) {
  Coordinator c;
  const auto p = add_worker(c, "p");
  const auto r = add_worker(c, "r");
  publish_one(c, p, "m", 1);
  const auto reply = acquire(c, r, "m", 1, {0});
  ASSERT_EQ(reply.assignments.size(), 1u);
  ASSERT_EQ(c.unpublish(p, "m", 1), 1u);

  const auto start = Clock::now();
  EXPECT_EQ(c.wait_drained(p, "m", 1, 50ms), 1u);
  EXPECT_GE(Clock::now() - start, 45ms);
  EXPECT_TRUE(version_status(c, "m", 1).has_value());  // still known while pinned

  complete_all(c, r, "m", 1, reply.assignments);
  EXPECT_EQ(c.wait_drained(p, "m", 1, kLongWait), 0u);
}

TEST(Coordinator, WaitDrainedWakesUpWhenAnotherThreadCompletes) {
  Coordinator c;
  const auto p = add_worker(c, "p");
  const auto r = add_worker(c, "r");
  publish_one(c, p, "m", 1);
  const auto reply = acquire(c, r, "m", 1, {0});
  ASSERT_EQ(c.unpublish(p, "m", 1), 1u);
  std::thread reader([&] { complete_all(c, r, "m", 1, reply.assignments); });
  const auto start = Clock::now();
  EXPECT_EQ(c.wait_drained(p, "m", 1, kLongWait), 0u);
  EXPECT_LT(Clock::now() - start, kLongWait);
  reader.join();
}

TEST(Coordinator, WaitDrainedBeforeUnpublishIsUserError) {
  Coordinator c;
  const auto p = add_worker(c, "p");
  publish_one(c, p, "m", 1);
  EXPECT_THROW(c.wait_drained(p, "m", 1, 1ms), UserError);
}

TEST(Coordinator, UnpublishOfAPendingShardWithdrawsIt) {
  Coordinator c;
  const auto a = add_worker(c, "a");
  const auto b = add_worker(c, "b");
  ASSERT_FALSE(c.publish(request(a, "m", 1, {"trainer", 2, 0}, {{"x", 10}})).committed);
  EXPECT_EQ(c.unpublish(a, "m", 1), 0u);
  EXPECT_EQ(version_status(c, "m", 1), std::nullopt);
  // Rank 1 alone does not commit it; rank 0 has to publish again.
  EXPECT_FALSE(c.publish(request(b, "m", 1, {"trainer", 2, 1}, {{"y", 10}})).committed);
  EXPECT_TRUE(c.publish(request(a, "m", 1, {"trainer", 2, 0}, {{"x", 10}})).committed);
}

// Regression test for a fixed bug: Coordinator::unpublish (lib/coord/src/coordinator.cpp, pending-shard branch)
// erases the version but not the then-empty model entry, unlike every other path that drops a
// version; status() then lists a model without versions.
TEST(Coordinator, UnpublishOfTheOnlyPendingShardForgetsTheModel) {
  Coordinator c;
  const auto a = add_worker(c, "a");
  ASSERT_FALSE(c.publish(request(a, "m", 1, {"trainer", 2, 0}, {{"x", 10}})).committed);
  EXPECT_EQ(c.unpublish(a, "m", 1), 0u);
  EXPECT_TRUE(c.status().empty());
}

TEST(Coordinator, AReadingGroupPinsTheOriginUntilEveryRankFinishes) {
  Coordinator c;
  const auto p = add_worker(c, "p");
  const auto r0 = add_worker(c, "r0");
  const auto r1 = add_worker(c, "r1");
  publish_one(c, p, "m", 1);
  ASSERT_EQ(resolve(c, r0, "m", {"readers", 2, 0}, 0).manifest->version, 1u);
  // The whole group (2 ranks) was promised v1, so the origin has 2 outstanding references.
  EXPECT_EQ(c.unpublish(p, "m", 1), 2u);
  EXPECT_EQ(c.wait_drained(p, "m", 1, 1ms), 2u);
  // Rank 1 still gets v1 after the withdrawal.
  EXPECT_EQ(resolve(c, r1, "m", {"readers", 2, 1}, 0).manifest->version, 1u);
  c.finish(FinishRequest{r0, "m", 1, {"readers", 2, 0}, 0});
  EXPECT_EQ(c.wait_drained(p, "m", 1, 1ms), 1u);
  c.finish(FinishRequest{r1, "m", 1, {"readers", 2, 1}, 0});
  EXPECT_EQ(c.wait_drained(p, "m", 1, kLongWait), 0u);
  EXPECT_TRUE(c.status().empty());
}

TEST(Coordinator, FinishWithoutResolveIsAUserError) {
  Coordinator c;
  const auto r = add_worker(c, "r");
  EXPECT_THROW(c.finish(FinishRequest{r, "m", 1, {"readers", 1, 0}, 0}), UserError);
}

// ---- retain / release ------------------------------------------------------------------------

TEST(Coordinator, RetainedLastHolderCannotUnpublishUntilRelease) {
  Coordinator c;
  const auto p = add_worker(c, "p");
  publish_one(c, p, "m", 1);
  c.retain("m", 1);
  c.retain("m", 1);
  EXPECT_EQ(version_status(c, "m", 1)->retained, 2u);
  EXPECT_THROW(c.unpublish(p, "m", 1), UserError);
  EXPECT_EQ(c.latest("m"), 1u);  // the refused unpublish changed nothing
  c.release("m", 1);
  EXPECT_THROW(c.unpublish(p, "m", 1), UserError);  // still retained once
  c.release("m", 1);
  EXPECT_THROW(c.release("m", 1), UserError);  // not retained any more
  EXPECT_EQ(c.unpublish(p, "m", 1), 0u);
  EXPECT_EQ(c.wait_drained(p, "m", 1, kLongWait), 0u);
  EXPECT_TRUE(c.status().empty());
}

TEST(Coordinator, RetainedVersionMayLoseAnOriginWhileARelayHoldsEveryChunk) {
  Coordinator c;
  const auto p = add_worker(c, "p");
  const auto r = add_worker(c, "r");
  publish_one(c, p, "m", 1, 2 * kChunk);
  c.retain("m", 1);
  c.offer_relay(RelayOffer{r, "m", 1, {region(r, "w")}});
  const auto a = acquire(c, r, "m", 1, {0, 1});
  ASSERT_EQ(a.assignments.size(), 2u);
  complete_all(c, r, "m", 1, a.assignments, {0, 1});
  EXPECT_EQ(c.unpublish(p, "m", 1), 0u);
  EXPECT_EQ(c.latest("m"), 1u);                     // still readable from the relay
  EXPECT_THROW(c.unpublish(r, "m", 1), UserError);  // but the relay is now the last holder
}

// ---- wait_for --------------------------------------------------------------------------------

TEST(Coordinator, WaitForWakesUpWhenAnotherThreadPublishes) {
  Coordinator c;
  const auto p = add_worker(c, "p");
  publish_one(c, p, "m", 1);
  std::promise<void> waiting;
  std::optional<std::uint64_t> got;
  Clock::duration waited{};
  std::thread waiter([&] {
    waiting.set_value();
    const auto start = Clock::now();
    got = c.wait_for("m", 1, kLongWait);
    waited = Clock::now() - start;
  });
  waiting.get_future().wait();
  publish_one(c, p, "m", 2);
  waiter.join();
  EXPECT_EQ(got, 2u);
  EXPECT_LT(waited, kLongWait);
}

TEST(Coordinator, WaitForTimesOutWithoutANewerVersion) {
  Coordinator c;
  const auto p = add_worker(c, "p");
  const auto q = add_worker(c, "q");
  publish_one(c, p, "m", 1);
  // An uncommitted v2 does not count.
  ASSERT_FALSE(c.publish(request(q, "m", 2, {"trainer", 2, 0}, {{"w", 10}})).committed);
  const auto start = Clock::now();
  EXPECT_EQ(c.wait_for("m", 1, 50ms), std::nullopt);
  EXPECT_GE(Clock::now() - start, 45ms);
  EXPECT_EQ(c.wait_for("unknown", std::nullopt, 1ms), std::nullopt);
}

TEST(Coordinator, WaitForReturnsAtOnceWhenAVersionIsAlreadyThere) {
  Coordinator c;
  const auto p = add_worker(c, "p");
  publish_one(c, p, "m", 3);
  EXPECT_EQ(c.wait_for("m", std::nullopt, kLongWait), 3u);
  EXPECT_EQ(c.wait_for("m", 2, kLongWait), 3u);
}

}  // namespace
}  // namespace tensorhub::coord
