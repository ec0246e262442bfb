// lib/coord coordinator.hpp, driven in-process with fake workers (no bytes move): the version
// lifecycle (group commit, latest, immutability, not-found errors), unpublish / pins /
// wait_drained, retain / release, wait_for across threads, reading-group resolution, source
// assignment under the per-source reader limit, relaying readers, and lost holders.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <future>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "tensorhub/coord/coordinator.hpp"
#include "tensorhub/core/error.hpp"

namespace tensorhub::coord {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr std::uint64_t kChunk = 4096;
// Generous bound for waits that are expected to succeed; they return as soon as they can.
constexpr auto kLongWait = 10s;

struct TensorDef {
  std::string name;
  std::uint64_t bytes;
};

WorkerId add_worker(Coordinator& c, const std::string& name) {
  WorkerInfo w;
  w.endpoint = "local:" + name;
  w.transport = "local";
  w.host = "host0";
  return c.register_worker(w);
}

// The opaque region descriptor a fake worker "exposes" for one of its tensors.
std::string region(WorkerId w, const std::string& tensor) { return "region:" + std::to_string(w) + ":" + tensor; }

// A shard of u8 tensors with made-up (but well-formed) checksums; the coordinator never sees bytes.
ShardManifest shard_of(std::uint32_t shard, const std::vector<TensorDef>& tensors) {
  ShardManifest s;
  s.shard = shard;
  std::uint64_t sum = 1;
  for (const auto& t : tensors) {
    s.tensors.push_back(TensorSpec{t.name, DType::kU8, {static_cast<std::int64_t>(t.bytes)}});
    s.checksums.emplace_back(chunk_count(t.bytes, kChunk));
    for (auto& x : s.checksums.back()) x = sum++;
  }
  return s;
}

PublishRequest request(WorkerId w, const std::string& model, std::uint64_t version, Group group,
                       const std::vector<TensorDef>& tensors) {
  PublishRequest r;
  r.worker = w;
  r.model = model;
  r.version = version;
  r.chunk_bytes = kChunk;
  r.shard = shard_of(group.rank, tensors);
  r.group = std::move(group);
  for (const auto& t : tensors) r.regions.push_back(region(w, t.name));
  return r;
}

// Publishes (model, version) from a single-rank group: one tensor "w" of `bytes` bytes.
PublishReply publish_one(Coordinator& c, WorkerId w, const std::string& model, std::uint64_t version,
                         std::uint64_t bytes = 3 * kChunk) {
  return c.publish(request(w, model, version, Group{"trainer", 1, 0}, {{"w", bytes}}));
}

ResolveReply resolve(Coordinator& c, WorkerId reader, const std::string& model, Group group = {"readers", 1, 0},
                     std::uint64_t seq = 0, std::optional<std::uint64_t> version = std::nullopt) {
  return c.resolve(ResolveRequest{reader, model, version, std::move(group), seq});
}

AcquireReply acquire(Coordinator& c, WorkerId reader, const std::string& model, std::uint64_t version,
                     std::vector<std::uint32_t> chunks, std::uint32_t max_assign = 16) {
  return c.acquire(AcquireRequest{reader, model, version, std::move(chunks), max_assign});
}

// Reports every assignment as read successfully; `now_held` makes the reader a relay holder.
void complete_all(Coordinator& c, WorkerId reader, const std::string& model, std::uint64_t version,
                  const std::vector<Assignment>& done, std::vector<std::uint32_t> now_held = {}) {
  CompleteRequest r;
  r.reader = reader;
  r.model = model;
  r.version = version;
  for (const auto& a : done) r.results.push_back(ChunkResult{a.chunk, a.holder, true});
  r.now_held = std::move(now_held);
  c.complete(r);
}

std::optional<VersionStatus> version_status(Coordinator& c, const std::string& model, std::uint64_t version) {
  for (const auto& m : c.status()) {
    if (m.model != model) continue;
    for (const auto& v : m.versions) {
      if (v.version == version) return v;
    }
  }
  return std::nullopt;
}

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
  const auto m = resolve(c, reader, "m").manifest;
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
  EXPECT_EQ(resolve(c, reader, "m").manifest.version, 1u);
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
  ASSERT_EQ(resolve(c, r0, "m", {"readers", 2, 0}, 0).manifest.version, 1u);
  // The whole group (2 ranks) was promised v1, so the origin has 2 outstanding references.
  EXPECT_EQ(c.unpublish(p, "m", 1), 2u);
  EXPECT_EQ(c.wait_drained(p, "m", 1, 1ms), 2u);
  // Rank 1 still gets v1 after the withdrawal.
  EXPECT_EQ(resolve(c, r1, "m", {"readers", 2, 1}, 0).manifest.version, 1u);
  c.finish(FinishRequest{r0, "m", 1, {"readers", 2, 0}, 0});
  EXPECT_EQ(c.wait_drained(p, "m", 1, 1ms), 1u);
  c.finish(FinishRequest{r1, "m", 1, {"readers", 2, 1}, 0});
  EXPECT_EQ(c.wait_drained(p, "m", 1, kLongWait), 0u);
  EXPECT_TRUE(c.status().empty());
}

TEST(Coordinator, FinishWithoutResolveIsAContractViolation) {
  Coordinator c;
  const auto r = add_worker(c, "r");
  EXPECT_THROW(c.finish(FinishRequest{r, "m", 1, {"readers", 1, 0}, 0}), ContractViolation);
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

// ---- reading groups --------------------------------------------------------------------------

TEST(Coordinator, AReadingGroupResolvesOnceForAllItsRanks) {
  Coordinator c;
  const auto p = add_worker(c, "p");
  const auto r0 = add_worker(c, "r0");
  const auto r1 = add_worker(c, "r1");
  publish_one(c, p, "m", 1);
  EXPECT_EQ(resolve(c, r0, "m", {"tp", 2, 0}, 0).manifest.version, 1u);
  publish_one(c, p, "m", 2);
  ASSERT_EQ(c.latest("m"), 2u);
  // Same group, same pull number: the version the group already resolved.
  EXPECT_EQ(resolve(c, r1, "m", {"tp", 2, 1}, 0).manifest.version, 1u);
  // The next pull, or another group, sees the newer version.
  EXPECT_EQ(resolve(c, r0, "m", {"tp", 2, 0}, 1).manifest.version, 2u);
  EXPECT_EQ(resolve(c, r0, "m", {"other", 1, 0}, 0).manifest.version, 2u);
}

TEST(Coordinator, ReadingGroupRankAskingForAnotherVersionIsUserError) {
  Coordinator c;
  const auto p = add_worker(c, "p");
  const auto r0 = add_worker(c, "r0");
  const auto r1 = add_worker(c, "r1");
  publish_one(c, p, "m", 1);
  publish_one(c, p, "m", 2);
  EXPECT_EQ(resolve(c, r0, "m", {"tp", 2, 0}, 0, 1).manifest.version, 1u);
  EXPECT_THROW(resolve(c, r1, "m", {"tp", 2, 1}, 0, 2), UserError);
  EXPECT_EQ(resolve(c, r1, "m", {"tp", 2, 1}, 0, 1).manifest.version, 1u);
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

TEST(Coordinator, CompleteOfAReadThatWasNotAssignedIsAContractViolation) {
  Coordinator c;
  const auto p = add_worker(c, "p");
  const auto r = add_worker(c, "r");
  publish_one(c, p, "m", 1);
  EXPECT_THROW(c.complete(CompleteRequest{r, "m", 1, {ChunkResult{0, p, true}}, {}}), ContractViolation);
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
  EXPECT_THROW(c.offer_relay(RelayOffer{a, "m", 1, {region(a, "w")}}), UserError);  // already held
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
  ASSERT_EQ(resolve(c, r, "m").manifest.chunks.size(), 3u);
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
  ASSERT_EQ(resolve(c, r, "m").manifest.chunks.size(), 3u);
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
