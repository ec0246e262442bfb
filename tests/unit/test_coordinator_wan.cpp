// Coordinator across datacenters (planner.hpp, wan_seed.hpp): local peers first, one reader per
// DC (the seed) reads across the WAN and the rest of its DC is served by it, seed failover
// (left, withdrew, failed a read), non-relaying readers, partial pulls, K slots per DC plus one
// WAN slot per other DC, and unlabelled jobs as before.
#include <algorithm>

#include "coord_test_util.hpp"

namespace tensorhub::coord {
namespace {

using namespace std::chrono_literals;

WorkerId add_in(Coordinator& c, const std::string& name, const std::string& dc) {
  WorkerInfo w;
  w.endpoint = "local:" + name;
  w.transport = "local";
  w.host = "host-" + name;
  w.dc = dc;
  return c.register_worker(w);
}

// Slots released as soon as reads drain: these tests are about which holders qualify.
CoordinatorConfig no_grace(std::uint32_t k) {
  CoordinatorConfig cfg;
  cfg.max_readers_per_source = k;
  cfg.slot_grace = 0ms;
  return cfg;
}

void offer(Coordinator& c, WorkerId reader) { c.offer_relay(RelayOffer{reader, "m", 1, {region(reader, "w")}}); }

std::vector<WanSeed> seeds(Coordinator& c) { return version_status(c, "m", 1)->wan_seeds; }

bool all_from(const AcquireReply& reply, WorkerId holder) {
  return std::all_of(reply.assignments.begin(), reply.assignments.end(),
                     [&](const Assignment& a) { return a.holder == holder; });
}

void fail_all(Coordinator& c, WorkerId reader, const std::vector<Assignment>& done) {
  CompleteRequest r{reader, "m", 1, {}, {}};
  for (const auto& a : done) r.results.push_back(ChunkResult{a.chunk, a.holder, false});
  c.complete(r);
}

// Origin p in dc0 publishes "m" v1 (4 chunks); readers a, b, d in dc1.
struct TwoDcs {
  explicit TwoDcs(std::uint32_t k = 2, bool relay = true)
      : c(no_grace(k)),
        p(add_in(c, "p", "dc0")),
        a(add_in(c, "a", "dc1")),
        b(add_in(c, "b", "dc1")),
        d(add_in(c, "d", "dc1")) {
    publish_one(c, p, "m", 1, 4 * kChunk);
    for (const auto r : {a, b, d}) {
      resolve(c, r, "m", {"readers-" + std::to_string(r), 1, 0});
      if (relay) offer(c, r);
    }
  }

  Coordinator c;
  WorkerId p, a, b, d;
};

const std::vector<std::uint32_t> kAll{0, 1, 2, 3};

// ---- one seed per DC -------------------------------------------------------------------------

TEST(CoordinatorWan, OnlyTheFirstRelayingReaderOfADcReadsAcrossTheWan) {
  TwoDcs w(/*k=*/8);  // a large K does not let more readers cross the WAN
  EXPECT_TRUE(seeds(w.c).empty());
  const auto first = acquire(w.c, w.a, "m", 1, kAll);
  ASSERT_EQ(first.assignments.size(), 4u);
  EXPECT_TRUE(all_from(first, w.p));
  for (const auto r : {w.b, w.d}) {
    const auto other = acquire(w.c, r, "m", 1, kAll);
    EXPECT_TRUE(other.assignments.empty()) << "reader " << r << " crossed the WAN";
    EXPECT_TRUE(other.unavailable.empty()) << "waiting for the seed is not a lost chunk";
  }
  EXPECT_EQ(seeds(w.c), (std::vector<WanSeed>{{"dc1", w.a}}));
}

TEST(CoordinatorWan, OtherReadersAreServedByTheSeedAsSoonAsItHoldsAChunk) {
  TwoDcs w(/*k=*/2);
  const auto first = acquire(w.c, w.a, "m", 1, kAll, /*max_assign=*/1);
  ASSERT_EQ(first.assignments.size(), 1u);
  EXPECT_EQ(first.assignments[0].holder, w.p);
  complete_all(w.c, w.a, "m", 1, first.assignments, {0});

  // Pipelined: chunk 0 comes from the seed now, the rest waits for it.
  for (const auto r : {w.b, w.d}) {
    const auto got = acquire(w.c, r, "m", 1, kAll);
    ASSERT_EQ(got.assignments.size(), 1u) << "reader " << r;
    EXPECT_EQ(got.assignments[0].chunk, 0u);
    EXPECT_EQ(got.assignments[0].holder, w.a);
    EXPECT_FALSE(got.assignments[0].origin);
    complete_all(w.c, r, "m", 1, got.assignments, {0});
  }
  const auto rest = acquire(w.c, w.a, "m", 1, {1, 2, 3});
  ASSERT_EQ(rest.assignments.size(), 3u);
  EXPECT_TRUE(all_from(rest, w.p));
  complete_all(w.c, w.a, "m", 1, rest.assignments, {1, 2, 3});
  const auto later = acquire(w.c, w.b, "m", 1, {1, 2, 3});
  ASSERT_EQ(later.assignments.size(), 3u);
  EXPECT_TRUE(all_from(later, w.a));
}

TEST(CoordinatorWan, PeersInTheDcBeatTheWanEvenWhenBusy) {
  TwoDcs w(/*k=*/1);
  const auto first = acquire(w.c, w.a, "m", 1, {0});
  complete_all(w.c, w.a, "m", 1, first.assignments, {0});
  const auto b0 = acquire(w.c, w.b, "m", 1, {0});
  ASSERT_EQ(b0.assignments.size(), 1u);
  EXPECT_EQ(b0.assignments[0].holder, w.a);
  // a's one slot is b's and b does not hold chunk 0 yet; the origin is idle but across the WAN.
  EXPECT_TRUE(acquire(w.c, w.d, "m", 1, {0}).assignments.empty());
  complete_all(w.c, w.b, "m", 1, b0.assignments, {0});
  const auto d0 = acquire(w.c, w.d, "m", 1, {0});
  ASSERT_EQ(d0.assignments.size(), 1u);
  EXPECT_NE(d0.assignments[0].holder, w.p);
}

TEST(CoordinatorWan, ChunksTheSeedDoesNotPullAreFetchedByAReaderThatRelaysThem) {
  Coordinator c(no_grace(2));
  const auto p = add_in(c, "p", "dc0");
  const auto a = add_in(c, "a", "dc1");
  const auto b = add_in(c, "b", "dc1");
  c.publish(request(p, "m", 1, {"trainer", 1, 0}, {{"x", kChunk}, {"y", kChunk}}));  // chunks 0 and 1
  c.offer_relay(RelayOffer{a, "m", 1, {region(a, "x"), ""}});                        // a pulls only x
  c.offer_relay(RelayOffer{b, "m", 1, {"", region(b, "y")}});                        // b pulls only y
  const auto x = acquire(c, a, "m", 1, {0});
  ASSERT_EQ(x.assignments.size(), 1u);
  EXPECT_EQ(seeds(c), (std::vector<WanSeed>{{"dc1", a}}));
  // The origin serves one reader of dc1 at a time: b's turn comes when a's read is done.
  EXPECT_TRUE(acquire(c, b, "m", 1, {1}).assignments.empty());
  complete_all(c, a, "m", 1, x.assignments, {0});
  const auto y = acquire(c, b, "m", 1, {1});
  ASSERT_EQ(y.assignments.size(), 1u);
  EXPECT_EQ(y.assignments[0].holder, p);
}

// ---- seed failover ---------------------------------------------------------------------------

TEST(CoordinatorWan, TheNextReaderSeedsWhenTheSeedLeaves) {
  TwoDcs w;
  ASSERT_EQ(acquire(w.c, w.a, "m", 1, {0}).assignments.size(), 1u);  // in flight when a leaves
  EXPECT_TRUE(acquire(w.c, w.b, "m", 1, {0}).assignments.empty());
  w.c.deregister_worker(w.a);
  EXPECT_TRUE(seeds(w.c).empty());
  const auto got = acquire(w.c, w.b, "m", 1, {0});
  ASSERT_EQ(got.assignments.size(), 1u);
  EXPECT_EQ(got.assignments[0].holder, w.p);
  EXPECT_EQ(seeds(w.c), (std::vector<WanSeed>{{"dc1", w.b}}));
  EXPECT_TRUE(acquire(w.c, w.d, "m", 1, {0}).assignments.empty());
}

TEST(CoordinatorWan, TheNextReaderSeedsWhenTheSeedWithdrawsItsRelay) {
  TwoDcs w;
  const auto first = acquire(w.c, w.a, "m", 1, {0});
  complete_all(w.c, w.a, "m", 1, first.assignments, {0});
  EXPECT_TRUE(acquire(w.c, w.b, "m", 1, {1}).assignments.empty());
  // a is about to reuse its buffers: it waits for the pulls of b and d, which resolved v1 before.
  EXPECT_EQ(w.c.unpublish(w.a, "m", 1), 2u);
  EXPECT_TRUE(seeds(w.c).empty());
  const auto got = acquire(w.c, w.b, "m", 1, {0, 1});
  ASSERT_EQ(got.assignments.size(), 2u);
  EXPECT_EQ(got.assignments[0].holder, w.a);  // a's withdrawn copy still serves b's pull
  EXPECT_EQ(got.assignments[1].holder, w.p);  // but b now seeds dc1
  EXPECT_EQ(seeds(w.c), (std::vector<WanSeed>{{"dc1", w.b}}));
}

TEST(CoordinatorWan, TheNextReaderSeedsWhenTheSeedFailsARead) {
  TwoDcs w;
  const auto first = acquire(w.c, w.a, "m", 1, {0});
  ASSERT_EQ(first.assignments.size(), 1u);
  fail_all(w.c, w.a, first.assignments);
  EXPECT_TRUE(seeds(w.c).empty());
  w.c.heartbeat(w.p);  // the holder proves alive: it is no longer suspect (liveness.hpp)
  const auto got = acquire(w.c, w.b, "m", 1, {0});
  ASSERT_EQ(got.assignments.size(), 1u);
  EXPECT_EQ(got.assignments[0].holder, w.p);
  EXPECT_EQ(seeds(w.c), (std::vector<WanSeed>{{"dc1", w.b}}));
  // The failed reader is not cut off: it waits for the new seed...
  const auto waiting = acquire(w.c, w.a, "m", 1, {0});
  EXPECT_TRUE(waiting.assignments.empty());
  EXPECT_TRUE(waiting.unavailable.empty());
  // ...and reads from it.
  complete_all(w.c, w.b, "m", 1, got.assignments, {0});
  const auto relayed = acquire(w.c, w.a, "m", 1, {0});
  ASSERT_EQ(relayed.assignments.size(), 1u);
  EXPECT_EQ(relayed.assignments[0].holder, w.b);
}

// ---- readers that do not relay ---------------------------------------------------------------

TEST(CoordinatorWan, ANonRelayingReaderNeverSeedsAndWaitsForARelayingOne) {
  TwoDcs w(/*k=*/2, /*relay=*/false);
  offer(w.c, w.a);
  // b asks first but keeps its copy to itself: a relaying reader of its DC will bring chunk 0.
  const auto early = acquire(w.c, w.b, "m", 1, {0});
  EXPECT_TRUE(early.assignments.empty());
  EXPECT_TRUE(early.unavailable.empty());
  EXPECT_TRUE(seeds(w.c).empty());
  const auto first = acquire(w.c, w.a, "m", 1, {0});
  ASSERT_EQ(first.assignments.size(), 1u);
  EXPECT_EQ(seeds(w.c), (std::vector<WanSeed>{{"dc1", w.a}}));
  complete_all(w.c, w.a, "m", 1, first.assignments, {0});
  const auto got = acquire(w.c, w.b, "m", 1, {0});
  ASSERT_EQ(got.assignments.size(), 1u);
  EXPECT_EQ(got.assignments[0].holder, w.a);
}

TEST(CoordinatorWan, ADcWithoutRelayingReadersStillReadsAcrossTheWan) {
  TwoDcs w(/*k=*/4, /*relay=*/false);
  const auto first = acquire(w.c, w.b, "m", 1, {0});
  ASSERT_EQ(first.assignments.size(), 1u);
  EXPECT_EQ(first.assignments[0].holder, w.p);
  EXPECT_TRUE(seeds(w.c).empty());  // it cannot serve its DC
  // The origin serves one reader of dc1 at a time, whatever K.
  const auto second = acquire(w.c, w.d, "m", 1, {0});
  EXPECT_TRUE(second.assignments.empty());
  EXPECT_TRUE(second.unavailable.empty());
  complete_all(w.c, w.b, "m", 1, first.assignments);
  const auto now = acquire(w.c, w.d, "m", 1, {0});
  ASSERT_EQ(now.assignments.size(), 1u);
  EXPECT_EQ(now.assignments[0].holder, w.p);
}

// ---- K accounting across DCs -----------------------------------------------------------------

TEST(CoordinatorWan, TheSeedDoesNotTakeOneOfTheHoldersLocalSlots) {
  TwoDcs w(/*k=*/1);
  const auto l1 = add_in(w.c, "l1", "dc0");
  const auto l2 = add_in(w.c, "l2", "dc0");
  const auto e = add_in(w.c, "e", "dc2");
  offer(w.c, e);
  ASSERT_EQ(acquire(w.c, w.a, "m", 1, {0}).assignments.size(), 1u);  // dc1's seed
  // The origin's one local slot (K=1) is still free for its own DC...
  const auto local = acquire(w.c, l1, "m", 1, {0});
  ASSERT_EQ(local.assignments.size(), 1u);
  EXPECT_EQ(local.assignments[0].holder, w.p);
  // ...and then taken.
  EXPECT_TRUE(acquire(w.c, l2, "m", 1, {0}).assignments.empty());
  // Another DC has a WAN slot of its own.
  const auto other = acquire(w.c, e, "m", 1, {0});
  ASSERT_EQ(other.assignments.size(), 1u);
  EXPECT_EQ(other.assignments[0].holder, w.p);
  EXPECT_EQ(seeds(w.c), (std::vector<WanSeed>{{"dc1", w.a}, {"dc2", e}}));
}

TEST(CoordinatorWan, BusyLocalSlotsDoNotBlockTheSeed) {
  TwoDcs w(/*k=*/1);
  const auto l1 = add_in(w.c, "l1", "dc0");
  ASSERT_EQ(acquire(w.c, l1, "m", 1, {0}).assignments.size(), 1u);
  const auto seed = acquire(w.c, w.a, "m", 1, {0});
  ASSERT_EQ(seed.assignments.size(), 1u);
  EXPECT_EQ(seed.assignments[0].holder, w.p);
}

// ---- unrestricted readers --------------------------------------------------------------------

TEST(CoordinatorWan, ReadersInTheOriginsDcAreNotRestricted) {
  TwoDcs w(/*k=*/2);
  const auto l1 = add_in(w.c, "l1", "dc0");
  const auto l2 = add_in(w.c, "l2", "dc0");
  offer(w.c, l1);
  for (const auto r : {l1, l2}) {
    const auto got = acquire(w.c, r, "m", 1, kAll);
    ASSERT_EQ(got.assignments.size(), 4u);
    EXPECT_TRUE(all_from(got, w.p));
  }
  EXPECT_TRUE(seeds(w.c).empty());
}

TEST(CoordinatorWan, EmptyLabelsAreOneDatacenter) {
  Coordinator c(no_grace(2));
  const auto p = add_worker(c, "p");  // dc "" and rack "" everywhere
  const auto r1 = add_worker(c, "r1");
  const auto r2 = add_worker(c, "r2");
  const auto r3 = add_worker(c, "r3");
  publish_one(c, p, "m", 1, 4 * kChunk);
  for (const auto r : {r1, r2, r3}) offer(c, r);
  EXPECT_EQ(acquire(c, r1, "m", 1, kAll).assignments.size(), 4u);
  EXPECT_EQ(acquire(c, r2, "m", 1, kAll).assignments.size(), 4u);  // K=2 readers of the origin
  EXPECT_TRUE(acquire(c, r3, "m", 1, kAll).assignments.empty());
  EXPECT_TRUE(seeds(c).empty());
}

}  // namespace
}  // namespace tensorhub::coord
