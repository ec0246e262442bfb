// Source slots (source_slots.hpp): per-DC counts, grace, release rules; and the Coordinator's
// sticky slots: a reader whose reads at a holder drained keeps its K slot there while it still
// wants chunks the holder has or relays, until it finishes, leaves or the grace period ends.
// Time is an injected clock or a grace of 0 / one hour: no test races a sleep.
#include <memory>

#include "coord_test_util.hpp"
#include "tensorhub/coord/source_slots.hpp"

namespace tensorhub::coord {
namespace {

using namespace std::chrono_literals;

// ---- SourceSlots -----------------------------------------------------------------------------

TEST(SourceSlots, CountsReadersPerDc) {
  SourceSlots s(0ms);
  s.add_read(1, 10, "dc0");
  s.add_read(1, 10, "dc0");  // the same reader counts once
  s.add_read(1, 11, "dc0");
  s.add_read(1, 12, "dc1");
  s.add_read(2, 13, "");
  EXPECT_EQ(s.readers_from(1, "dc0"), 2u);
  EXPECT_EQ(s.readers_from(1, "dc1"), 1u);
  EXPECT_EQ(s.readers_from(1, ""), 0u);
  EXPECT_EQ(s.readers_from(2, ""), 1u);
  EXPECT_EQ(s.readers_from(3, "dc0"), 0u);
  EXPECT_TRUE(s.serves(1, 12));
  EXPECT_FALSE(s.serves(2, 12));
  EXPECT_EQ(s.reads(1, 10), 2u);
}

TEST(SourceSlots, WithoutGraceASlotGoesWithItsLastRead) {
  SourceSlots s(0ms);
  const auto t = SourceSlots::Clock::now();
  s.add_read(1, 10, "");
  s.add_read(1, 10, "");
  EXPECT_FALSE(s.end_read(1, 10, t));
  EXPECT_TRUE(s.serves(1, 10));
  EXPECT_TRUE(s.end_read(1, 10, t));
  EXPECT_FALSE(s.serves(1, 10));
  EXPECT_FALSE(s.end_read(1, 10, t));  // nothing counted: nothing to end
}

TEST(SourceSlots, WithGraceAnIdleSlotStaysUntilItExpiresOrIsReleased) {
  SourceSlots s(100ms);
  const auto t = SourceSlots::Clock::now();
  s.add_read(1, 10, "");
  s.add_read(2, 10, "");
  s.add_read(3, 10, "");
  EXPECT_TRUE(s.end_read(1, 10, t));
  EXPECT_TRUE(s.end_read(2, 10, t + 50ms));
  EXPECT_TRUE(s.serves(1, 10));
  EXPECT_EQ(s.idle_slots_of(10), (std::vector<WorkerId>{1, 2}));
  s.expire(t + 99ms);
  EXPECT_TRUE(s.serves(1, 10));
  s.expire(t + 100ms);
  EXPECT_FALSE(s.serves(1, 10));
  EXPECT_TRUE(s.serves(2, 10));
  EXPECT_TRUE(s.serves(3, 10));  // busy slots never expire
  s.expire(t + 1h);
  EXPECT_TRUE(s.serves(3, 10));
  s.release_if_idle(3, 10);
  EXPECT_TRUE(s.serves(3, 10));  // busy: not released
}

TEST(SourceSlots, AWorkerThatLeftLosesEverySlot) {
  SourceSlots s(1h);
  s.add_read(1, 10, "");  // busy
  s.add_read(2, 10, "");
  s.end_read(2, 10, SourceSlots::Clock::now());  // idle
  s.add_read(10, 11, "");                        // 10 as a holder
  s.add_read(1, 12, "");
  s.forget_worker(10);
  EXPECT_FALSE(s.serves(1, 10));
  EXPECT_FALSE(s.serves(2, 10));
  EXPECT_FALSE(s.serves(10, 11));
  EXPECT_TRUE(s.serves(1, 12));
}

// ---- sticky slots in the Coordinator ---------------------------------------------------------

CoordinatorConfig k1(std::chrono::milliseconds grace) {
  CoordinatorConfig cfg;
  cfg.max_readers_per_source = 1;
  cfg.slot_grace = grace;
  return cfg;
}

void offer(Coordinator& c, WorkerId reader) { c.offer_relay(RelayOffer{reader, "m", 1, {region(reader, "w")}}); }

// Trainer t, readers a and b relaying; K=1; "m" v1 has 4 chunks. a reads chunks 0 and 1 from t
// and completes them: between this acquire and its next one, a has no read in flight at t.
struct SlotScenario {
  explicit SlotScenario(CoordinatorConfig cfg)
      : c(std::move(cfg)), t(add_worker(c, "t")), a(add_worker(c, "a")), b(add_worker(c, "b")) {
    publish_one(c, t, "m", 1, 4 * kChunk);
    offer(c, a);
    offer(c, b);
    const auto first = acquire(c, a, "m", 1, {0, 1, 2, 3}, /*max_assign=*/2);
    EXPECT_EQ(first.assignments.size(), 2u);
    for (const auto& x : first.assignments) EXPECT_EQ(x.holder, t);
    complete_all(c, a, "m", 1, first.assignments, {0, 1});
    EXPECT_EQ(version_status(c, "m", 1)->pins, 0u);
  }

  // Does b get a read from the trainer now?
  bool b_gets_the_trainer() {
    const auto got = acquire(c, b, "m", 1, {2, 3});
    const bool yes = !got.assignments.empty() && got.assignments[0].holder == t;
    complete_all(c, b, "m", 1, got.assignments);
    return yes;
  }

  Coordinator c;
  WorkerId t, a, b;
};

TEST(CoordinatorSlots, AReaderKeepsItsSlotBetweenTwoAcquires) {
  SlotScenario s(k1(1h));
  // b must not steal a's slot at the trainer: it reads what a already holds from a.
  const auto got = acquire(s.c, s.b, "m", 1, {0, 1, 2, 3});
  ASSERT_EQ(got.assignments.size(), 2u);
  for (const auto& x : got.assignments) {
    EXPECT_EQ(x.holder, s.a) << "chunk " << x.chunk;
    EXPECT_LT(x.chunk, 2u);
  }
  // a continues at the trainer, which has sent every chunk once.
  const auto next = acquire(s.c, s.a, "m", 1, {2, 3});
  ASSERT_EQ(next.assignments.size(), 2u);
  for (const auto& x : next.assignments) EXPECT_EQ(x.holder, s.t);
}

TEST(CoordinatorSlots, WithoutGraceTheSlotIsFreeAsSoonAsTheReadsDrain) {
  SlotScenario s(k1(0ms));
  EXPECT_TRUE(s.b_gets_the_trainer());
}

TEST(CoordinatorSlots, TheSlotExpiresAfterTheGracePeriod) {
  auto now = std::make_shared<Clock::time_point>(Clock::now());
  auto cfg = k1(200ms);
  cfg.clock = [now] { return *now; };
  SlotScenario s(std::move(cfg));  // a's reads drained at *now
  *now += 199ms;
  EXPECT_FALSE(s.b_gets_the_trainer());
  *now += 1ms;
  EXPECT_TRUE(s.b_gets_the_trainer());
}

TEST(CoordinatorSlots, FinishReleasesTheSlot) {
  SlotScenario s(k1(1h));
  resolve(s.c, s.a, "m", {"ga", 1, 0});
  EXPECT_FALSE(s.b_gets_the_trainer());
  s.c.finish(FinishRequest{s.a, "m", 1, {"ga", 1, 0}, 0});
  EXPECT_TRUE(s.b_gets_the_trainer());
}

TEST(CoordinatorSlots, LeavingReleasesTheSlotEvenWithReadsInFlight) {
  SlotScenario s(k1(1h));
  ASSERT_EQ(acquire(s.c, s.a, "m", 1, {2}).assignments.size(), 1u);
  EXPECT_FALSE(s.b_gets_the_trainer());
  s.c.deregister_worker(s.a);
  EXPECT_TRUE(s.b_gets_the_trainer());
}

TEST(CoordinatorSlots, TheSlotIsReleasedWhenTheHolderHasNothingMoreTheReaderWants) {
  SlotScenario s(k1(1h));
  // a's last acquire was assigned everything it asked for: it wants nothing more from t.
  const auto rest = acquire(s.c, s.a, "m", 1, {2, 3});
  ASSERT_EQ(rest.assignments.size(), 2u);
  EXPECT_FALSE(s.b_gets_the_trainer());              // reads in flight
  complete_all(s.c, s.a, "m", 1, rest.assignments);  // (not relayed, so b has to go to t)
  EXPECT_TRUE(s.b_gets_the_trainer());
}

TEST(CoordinatorSlots, AReaderWaitingForItsRelayKeepsItsSlotThere) {
  SlotScenario s(k1(1h));
  const auto c3 = add_worker(s.c, "c3");
  offer(s.c, c3);
  // b reads chunks 0 and 1 from a (a's one slot) and has caught up: a does not hold 2 and 3 yet.
  const auto b01 = acquire(s.c, s.b, "m", 1, {0, 1, 2, 3});
  ASSERT_EQ(b01.assignments.size(), 2u);
  for (const auto& x : b01.assignments) ASSERT_EQ(x.holder, s.a);
  complete_all(s.c, s.b, "m", 1, b01.assignments, {0, 1});
  // a relays chunks b still wants, so c3 cannot take b's place at a: it reads from b.
  const auto got = acquire(s.c, c3, "m", 1, {0, 1});
  ASSERT_EQ(got.assignments.size(), 2u);
  for (const auto& x : got.assignments) EXPECT_EQ(x.holder, s.b) << "chunk " << x.chunk;
}

}  // namespace
}  // namespace tensorhub::coord
