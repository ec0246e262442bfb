// Worker leases (liveness.hpp): suspect and dead workers, what the coordinator removes when a
// worker dies, and how holders' unpublish stops waiting for a dead reader.
// Time is an injected clock; nothing here races a sleep.
#include <memory>

#include "coord_test_util.hpp"
#include "tensorhub/coord/liveness.hpp"

namespace tensorhub::coord {
namespace {

struct FakeTime {
  std::shared_ptr<Clock::time_point> now = std::make_shared<Clock::time_point>(Clock::now());
  void advance(std::chrono::milliseconds d) const { *now += d; }
};

CoordinatorConfig leased(const FakeTime& t, std::chrono::milliseconds lease = 1000ms) {
  CoordinatorConfig cfg;
  cfg.lease = lease;
  cfg.slot_grace = 0ms;
  cfg.clock = [now = t.now] { return *now; };
  return cfg;
}

// Points into `all`: keep the vector alive while the pointer is used.
const WorkerStatus* find_worker(const std::vector<WorkerStatus>& all, WorkerId id) {
  for (const auto& w : all) {
    if (w.worker == id) return &w;
  }
  return nullptr;
}

// ---- Liveness on its own ---------------------------------------------------------------------

TEST(Liveness, SilenceMakesSuspectThenExpired) {
  Liveness l(1000ms);
  const auto t0 = Clock::now();
  l.add(1, t0);
  EXPECT_FALSE(l.suspect(1, t0 + 500ms));
  EXPECT_TRUE(l.suspect(1, t0 + 501ms));
  EXPECT_NE(l.suspicion(1, t0 + 600ms).find("silent for 600 ms"), std::string::npos);
  EXPECT_TRUE(l.expired(t0 + 1000ms).empty());
  EXPECT_EQ(l.expired(t0 + 1001ms), std::vector<WorkerId>{1});
  l.touch(1, t0 + 900ms);
  EXPECT_FALSE(l.suspect(1, t0 + 1001ms));
  EXPECT_TRUE(l.expired(t0 + 1001ms).empty());
}

TEST(Liveness, AReportedFailureLastsUntilTheWorkerIsHeardFrom) {
  Liveness l(1000ms);
  const auto t0 = Clock::now();
  l.add(1, t0);
  l.report_failure(1, t0, "read failed");
  EXPECT_EQ(l.suspicion(1, t0), "read failed");
  l.touch(1, t0 + 10ms);
  EXPECT_FALSE(l.suspect(1, t0 + 10ms));
}

TEST(Liveness, ExpiredListsTheOldestSilenceFirst) {
  Liveness l(100ms);
  const auto t0 = Clock::now();
  l.add(2, t0 + 10ms);
  l.add(1, t0 + 20ms);
  l.add(3, t0);
  EXPECT_EQ(l.expired(t0 + 1s), (std::vector<WorkerId>{3, 2, 1}));
}

TEST(Liveness, LeaseZeroNeverExpires) {
  Liveness l(0ms);
  const auto t0 = Clock::now();
  l.add(1, t0);
  l.report_failure(1, t0, "x");
  EXPECT_FALSE(l.suspect(1, t0 + 24h));
  EXPECT_TRUE(l.expired(t0 + 24h).empty());
  EXPECT_THROW(Liveness(-1ms), UserError);
}

// ---- the coordinator -------------------------------------------------------------------------

TEST(CoordinatorLiveness, WorkerIdsOfTwoCoordinatorsDiffer) {
  CoordinatorConfig a;
  a.incarnation = 1;
  CoordinatorConfig b;
  b.incarnation = 2;
  Coordinator ca(a);
  Coordinator cb(b);
  const auto wa = add_worker(ca, "x");
  const auto wb = add_worker(cb, "x");
  EXPECT_NE(wa, wb);
  EXPECT_THROW(cb.heartbeat(wa), UnknownWorker);  // another coordinator's id is unknown here
  EXPECT_EQ(cb.heartbeat(0).lease_ms, 5000u);     // a probe; 5 s is the default lease
}

TEST(CoordinatorLiveness, ASilentHolderIsDeclaredDeadAndItsReferencesGo) {
  FakeTime t;
  Coordinator c(leased(t));
  const auto p = add_worker(c, "p");
  const auto r = add_worker(c, "r");
  publish_one(c, p, "m", 1);
  resolve(c, r, "m");
  t.advance(600ms);
  c.heartbeat(r);  // the reader keeps its lease, the publisher does not
  auto w = c.workers();
  ASSERT_NE(find_worker(w, p), nullptr);
  EXPECT_EQ(find_worker(w, p)->state, WorkerState::kSuspect);
  EXPECT_EQ(find_worker(w, r)->state, WorkerState::kAlive);
  // A suspect holder gets no new reads; the chunk is not lost yet (it may come back).
  auto got = acquire(c, r, "m", 1, {0});
  EXPECT_TRUE(got.assignments.empty());
  t.advance(401ms);
  c.heartbeat(r);
  w = c.workers();
  ASSERT_NE(find_worker(w, p), nullptr);
  EXPECT_EQ(find_worker(w, p)->state, WorkerState::kDead);
  EXPECT_NE(find_worker(w, p)->reason.find("lease expired"), std::string::npos);
  EXPECT_THROW(c.heartbeat(p), UnknownWorker);
  // Its reference went: the reader learns the chunks are unavailable, naming nobody.
  got = acquire(c, r, "m", 1, {0, 1, 2});
  EXPECT_TRUE(got.assignments.empty());
  EXPECT_EQ(got.unavailable, (std::vector<std::uint32_t>{0, 1, 2}));
  EXPECT_FALSE(c.latest("m").has_value());
}

TEST(CoordinatorLiveness, AFailedReadMakesTheHolderSuspectForEveryReaderUntilItIsHeardFrom) {
  FakeTime t;
  Coordinator c(leased(t));
  const auto p = add_worker(c, "p");
  const auto a = add_worker(c, "a");
  const auto b = add_worker(c, "b");
  const auto d = add_worker(c, "d");
  publish_one(c, p, "m", 1);
  for (const auto reader : {a, b, d}) {
    resolve(c, reader, "m", {"g" + std::to_string(reader), 1, 0});
    c.offer_relay(RelayOffer{reader, "m", 1, {region(reader, "w")}});
  }
  const auto first = acquire(c, a, "m", 1, {0, 1, 2});
  ASSERT_EQ(first.assignments.size(), 3u);
  complete_all(c, a, "m", 1, first.assignments, {0, 1, 2});  // a now relays everything
  const auto first_b = acquire(c, b, "m", 1, {0});
  ASSERT_EQ(first_b.assignments.size(), 1u);
  const auto bad = first_b.assignments[0].holder;
  const auto good = bad == p ? a : p;
  c.complete(CompleteRequest{b, "m", 1, {ChunkResult{0, bad, false}}, {}});
  // d never read from `bad`, yet it is suspect now: d is served by the other holder.
  for (int i = 0; i < 3; ++i) {
    const auto got = acquire(c, d, "m", 1, {0});
    ASSERT_EQ(got.assignments.size(), 1u);
    EXPECT_EQ(got.assignments[0].holder, good);
    complete_all(c, d, "m", 1, got.assignments);
  }
  const auto before = c.workers();
  EXPECT_EQ(find_worker(before, bad)->state, WorkerState::kSuspect);
  c.heartbeat(bad);
  const auto after = c.workers();
  EXPECT_EQ(find_worker(after, bad)->state, WorkerState::kAlive);
}

TEST(CoordinatorLiveness, UnpublishStopsWaitingForADeadReadersPins) {
  FakeTime t;
  Coordinator c(leased(t));
  const auto p = add_worker(c, "p");
  const auto r = add_worker(c, "r");
  publish_one(c, p, "m", 1);
  resolve(c, r, "m");
  const auto got = acquire(c, r, "m", 1, {0, 1});
  ASSERT_EQ(got.assignments.size(), 2u);
  EXPECT_EQ(c.unpublish(p, "m", 1), 3u);  // two reads and the reading group's pin
  EXPECT_EQ(c.wait_drained(p, "m", 1, 0ms), 3u);
  t.advance(600ms);
  EXPECT_EQ(c.wait_drained(p, "m", 1, 0ms), 3u);
  t.advance(401ms);  // the reader is silent for a whole lease; the publisher called meanwhile
  EXPECT_EQ(c.wait_drained(p, "m", 1, 0ms), 0u);
  EXPECT_FALSE(version_status(c, "m", 1).has_value());  // forgotten: nothing holds it
  const auto all = c.workers();
  const auto dead = find_worker(all, r);
  ASSERT_NE(dead, nullptr);
  EXPECT_EQ(dead->state, WorkerState::kDead);
  // The dead reader's late calls are refused so it re-registers.
  EXPECT_THROW(c.complete(CompleteRequest{r, "m", 1, {ChunkResult{0, p, true}}, {}}), UnknownWorker);
}

TEST(CoordinatorLiveness, ADeadRankOfAReadingGroupReleasesTheGroupsPin) {
  FakeTime t;
  Coordinator c(leased(t));
  const auto p = add_worker(c, "p");
  const auto r0 = add_worker(c, "r0");
  const auto r1 = add_worker(c, "r1");
  publish_one(c, p, "m", 1);
  resolve(c, r0, "m", {"rollout", 2, 0}, 1);
  resolve(c, r1, "m", {"rollout", 2, 1}, 1);
  c.finish(FinishRequest{r0, "m", 1, {"rollout", 2, 0}, 1});
  EXPECT_EQ(c.unpublish(p, "m", 1), 1u);  // r1 has not finished
  t.advance(800ms);
  c.heartbeat(p);
  t.advance(300ms);  // r1 silent for 1.1 s: dead
  EXPECT_EQ(c.wait_drained(p, "m", 1, 0ms), 0u);
}

TEST(CoordinatorLiveness, AReadOfAHolderDeclaredDeadMeanwhileCompletesQuietly) {
  FakeTime t;
  Coordinator c(leased(t));
  const auto p = add_worker(c, "p");
  const auto q = add_worker(c, "q");
  const auto r = add_worker(c, "r");
  publish_one(c, p, "m", 1);
  resolve(c, q, "m", {"gq", 1, 0});
  c.offer_relay(RelayOffer{q, "m", 1, {region(q, "w")}});
  complete_all(c, q, "m", 1, acquire(c, q, "m", 1, {0, 1, 2}).assignments, {0, 1, 2});
  resolve(c, r, "m");
  const auto got = acquire(c, r, "m", 1, {0});
  ASSERT_EQ(got.assignments.size(), 1u);
  const auto holder = got.assignments[0].holder;
  const auto other = holder == p ? q : p;
  t.advance(600ms);
  c.heartbeat(r);
  c.heartbeat(other);  // `holder` dies, `other` lives
  t.advance(401ms);
  c.complete(CompleteRequest{r, "m", 1, {ChunkResult{0, holder, false}}, {}});
  const auto again = acquire(c, r, "m", 1, {0});
  ASSERT_EQ(again.assignments.size(), 1u);
  EXPECT_EQ(again.assignments[0].holder, other);
}

TEST(CoordinatorLiveness, ACleanLeaveIsListedAsLeft) {
  Coordinator c;
  const auto w = add_worker(c, "w");
  c.deregister_worker(w);
  const auto all = c.workers();
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].state, WorkerState::kLeft);
  EXPECT_EQ(all[0].info.endpoint, "local:w");
}

TEST(CoordinatorLiveness, APendingShardOfADeadPublisherGoes) {
  FakeTime t;
  Coordinator c(leased(t));
  const auto p0 = add_worker(c, "p0");
  c.publish(request(p0, "m", 1, Group{"trainer", 2, 0}, {{"a", kChunk}}));
  ASSERT_EQ(c.status().size(), 1u);
  t.advance(1001ms);
  EXPECT_TRUE(c.status().empty());
}

}  // namespace
}  // namespace tensorhub::coord
