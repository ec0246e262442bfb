// Plan-based pulls (plan_book.hpp, coordinator_plans.cpp): relay chains (K = 1) and striped
// trees (K = 2) rooted at the publisher, one WAN seed per DC, exclude and failed planned reads,
// late joiners, plan pins (unpublish waits; release_sources, finish and forget release them),
// waiting / unavailable, input validation, and the control calls of a whole pull.
#include <algorithm>
#include <map>

#include "coord_test_util.hpp"

namespace tensorhub::coord {
namespace {

constexpr std::uint32_t kChunks = 32;  // 16 stripes of 2 chunks (one shard)

WorkerId add_at(Coordinator& c, const std::string& name, const std::string& dc = "", const std::string& host = "") {
  WorkerInfo w;
  w.endpoint = "local:" + name;
  w.transport = "local";
  w.host = host.empty() ? "host-" + name : host;
  w.dc = dc;
  return c.register_worker(w);
}

CoordinatorConfig with_k(std::uint32_t k) {
  CoordinatorConfig cfg;
  cfg.max_readers_per_source = k;
  cfg.plan_fanout = k;
  cfg.lease = 0ms;
  return cfg;
}

struct Plans {
  explicit Plans(std::uint32_t k, const std::string& origin_dc = "") : c(with_k(k)), p(add_at(c, "p", origin_dc)) {
    publish_one(c, p, "m", 1, kChunks * kChunk);
  }
  // Resolves and offers a relay (unless `relay` is false).
  WorkerId reader(const std::string& name, bool relay = true, const std::string& dc = "") {
    const auto r = add_at(c, name, dc);
    resolve(c, r, "m", {"g-" + name, 1, 0});
    if (relay) c.offer_relay(RelayOffer{r, "m", 1, {region(r, "w")}, "progress:" + name});
    return r;
  }
  PlanReply plan(WorkerId r, std::vector<WorkerId> exclude = {}) {
    return c.plan(PlanRequest{r, "m", 1, {ChunkRange{0, kChunks}}, std::move(exclude)});
  }
  void finish(WorkerId r, const std::string& name) { c.finish(FinishRequest{r, "m", 1, {"g-" + name, 1, 0}, 1}); }
  void complete(WorkerId r, std::vector<ChunkRange> held, std::vector<WorkerId> release = {}) {
    CompleteRequest q;
    q.reader = r;
    q.model = "m";
    q.version = 1;
    q.held_ranges = std::move(held);
    q.release_sources = std::move(release);
    c.complete(q);
  }
  Coordinator c;
  WorkerId p;
};

// Pins of reads on the version's holders (VersionStatus::pins also counts group pins).
std::uint32_t read_pins(Coordinator& c) {
  std::uint32_t n = 0;
  const auto st = version_status(c, "m", 1);
  for (const auto& h : st->holder_list) n += h.pins;
  return n;
}

// Every chunk planned, from the one source `holder`.
void expect_all_from(const PlanReply& r, WorkerId holder) {
  ASSERT_EQ(r.sources.size(), 1u);
  EXPECT_EQ(r.sources[0].holder, holder);
  ASSERT_EQ(r.steps.size(), 1u);
  EXPECT_EQ(r.steps[0].range, (ChunkRange{0, kChunks}));
  EXPECT_TRUE(r.waiting.empty());
  EXPECT_TRUE(r.unavailable.empty());
}

TEST(CoordinatorPlans, KOneFormsAChainRootedAtThePublisher) {
  Plans w(1);
  const auto a = w.reader("a");
  const auto b = w.reader("b");
  const auto d = w.reader("d");
  const auto ra = w.plan(a);
  expect_all_from(ra, w.p);
  EXPECT_TRUE(ra.sources[0].origin);
  EXPECT_TRUE(ra.sources[0].progress.empty()) << "a publisher holds everything";
  EXPECT_EQ(ra.sources[0].regions, (std::vector<std::string>{region(w.p, "w")}));
  const auto rb = w.plan(b);
  expect_all_from(rb, a);
  EXPECT_FALSE(rb.sources[0].origin);
  EXPECT_EQ(rb.sources[0].progress, "progress:a") << "a planned holder: follow its progress bytes";
  expect_all_from(w.plan(d), b);
  // Asking again changes nothing (same parent, no second pin).
  expect_all_from(w.plan(b), a);
  EXPECT_EQ(read_pins(w.c), 3u);
}

TEST(CoordinatorPlans, KTwoStripesTreesSoEveryRelaySendsAboutOneCopy) {
  Plans w(2);
  std::vector<WorkerId> readers;
  for (int i = 0; i < 12; ++i) readers.push_back(w.reader("r" + std::to_string(i)));
  for (const auto r : readers) {
    const auto reply = w.plan(r);
    EXPECT_TRUE(reply.waiting.empty());
    EXPECT_TRUE(reply.unavailable.empty());
  }
  // Count each holder's planned children per stripe from the readers' (unchanged) plans.
  std::map<WorkerId, std::uint32_t> inner;  // stripes where a relay has children
  std::uint32_t origin_children = 0;
  for (const auto r : readers) {
    const auto reply = w.plan(r);  // unchanged parents
    for (const auto& step : reply.steps) {
      const auto holder = reply.sources[step.source].holder;
      // Stripes are 2 chunks long: one step may cover several.
      const auto stripes = step.range.count / 2;
      if (holder == w.p)
        origin_children += stripes;
      else
        inner[holder] += stripes;
    }
  }
  // The first reader reads every stripe from the publisher; in the stripes where it is not
  // eligible the publisher's spare slot (not that reader) serves the next one: the publisher
  // sends at most 1 + (K-1)/K copies, and no relay more than one copy (16 stripes).
  EXPECT_GE(origin_children, 16u);
  EXPECT_LE(origin_children, 16u + 16u / 2u);
  std::uint32_t relayed = 0;
  for (const auto& [holder, children] : inner) {
    EXPECT_LE(children, 16u) << "relay " << holder << " feeds K children in 1/K of the stripes: one copy";
    relayed += children;
  }
  EXPECT_EQ(origin_children + relayed, 12u * 16u) << "every reader planned for every stripe once";
}

TEST(CoordinatorPlans, OneWanSeedPerDcTheRestPlansUnderIt) {
  Plans w(1, "dc0");
  const auto a = w.reader("a", true, "dc1");
  const auto b = w.reader("b", true, "dc1");
  const auto l = w.reader("l", true, "dc0");
  expect_all_from(w.plan(a), w.p);
  EXPECT_EQ(version_status(w.c, "m", 1)->wan_seeds, (std::vector<WanSeed>{{"dc1", a}}));
  expect_all_from(w.plan(b), a);
  expect_all_from(w.plan(l), w.p);  // the WAN child took no local slot of the publisher
}

TEST(CoordinatorPlans, ExcludedOrFailedSourcesAreReplacedAndReported) {
  Plans w(1);
  const auto a = w.reader("a");
  const auto b = w.reader("b");
  const auto d = w.reader("d");
  w.plan(a);
  w.plan(b);
  expect_all_from(w.plan(d), b);
  // d's read from b failed: accepted like an assigned read's failure (b becomes suspect).
  CompleteRequest q{d, "m", 1, {ChunkResult{0, b, false}}, {}};
  w.c.complete(q);
  // K = 1: every other member's slot is taken, so d waits (it never crosses K) ...
  const auto again = w.plan(d, {b});
  EXPECT_TRUE(again.steps.empty());
  EXPECT_EQ(again.waiting, (std::vector<ChunkRange>{{0, kChunks}}));
  // ... until a releases its source: d grafts under the publisher.
  w.complete(a, {}, {w.p});
  expect_all_from(w.plan(d, {b}), w.p);
  // A report about a source that was neither assigned nor planned is refused.
  const auto e = w.reader("e");
  EXPECT_THROW(w.c.complete(CompleteRequest{e, "m", 1, {ChunkResult{0, a, false}}, {}}), UserError);
}

TEST(CoordinatorPlans, OnlySourceExcludedIsUnavailable) {
  Plans w(1);
  const auto a = w.reader("a", false);
  const auto r = w.plan(a, {w.p});
  EXPECT_TRUE(r.steps.empty());
  EXPECT_EQ(r.unavailable, (std::vector<ChunkRange>{{0, kChunks}}));
}

TEST(CoordinatorPlans, NonRelayingReadersWaitForAFreeSlot) {
  Plans w(1);
  const auto a = w.reader("a", false);
  const auto b = w.reader("b", false);
  expect_all_from(w.plan(a), w.p);
  const auto rb = w.plan(b);
  EXPECT_TRUE(rb.steps.empty());
  EXPECT_EQ(rb.waiting, (std::vector<ChunkRange>{{0, kChunks}})) << "K = 1: the publisher's slot is a's";
  w.finish(a, "a");
  expect_all_from(w.plan(b), w.p);
}

TEST(CoordinatorPlans, LateJoinerGraftsUnderAReaderThatFinished) {
  Plans w(1);
  const auto a = w.reader("a");
  w.plan(a);
  w.complete(a, {{0, kChunks}}, {w.p});
  w.finish(a, "a");
  EXPECT_EQ(read_pins(w.c), 0u);
  const auto late = w.reader("late");
  const auto r = w.plan(late);
  expect_all_from(r, a);
  EXPECT_TRUE(r.sources[0].progress.empty()) << "a holds every chunk now";
}

TEST(CoordinatorPlans, UnpublishWaitsForPlanPinsUntilReleased) {
  Plans w(1);
  const auto a = w.reader("a", false);
  w.plan(a);
  EXPECT_EQ(w.c.unpublish(w.p, "m", 1), 2u) << "the plan pin and a's unfinished group read";
  w.complete(a, {}, {w.p});
  w.finish(a, "a");
  EXPECT_EQ(w.c.wait_drained(w.p, "m", 1, 0ms), 0u);
}

TEST(CoordinatorPlans, FinishAndForgetReleasePlanPins) {
  Plans w(2);
  const auto a = w.reader("a", false);
  const auto b = w.reader("b", false);
  w.plan(a);
  w.plan(b);
  EXPECT_EQ(read_pins(w.c), 2u);
  w.finish(a, "a");
  EXPECT_EQ(read_pins(w.c), 1u);
  w.c.deregister_worker(b);
  EXPECT_EQ(read_pins(w.c), 0u);
  const auto d = w.reader("d", false);
  expect_all_from(w.plan(d), w.p);  // their child slots went with them
}

TEST(CoordinatorPlans, DeadParentIsReplacedOnTheNextPlan) {
  Plans w(1);
  const auto a = w.reader("a");
  const auto b = w.reader("b");
  w.plan(a);
  expect_all_from(w.plan(b), a);
  w.c.deregister_worker(a);
  expect_all_from(w.plan(b, {a}), w.p);
}

TEST(CoordinatorPlans, RejectsRangesOutsideTheVersion) {
  Plans w(1);
  const auto a = w.reader("a");
  EXPECT_THROW(w.c.plan(PlanRequest{a, "m", 1, {ChunkRange{kChunks - 1, 2}}, {}}), UserError);
  EXPECT_THROW(w.c.plan(PlanRequest{a, "m", 1, {ChunkRange{0, 0}}, {}}), UserError);
  EXPECT_THROW(w.complete(a, {{UINT32_MAX, 2}}), UserError);
  EXPECT_THROW(w.c.plan(PlanRequest{a, "m", 1, {}, std::vector<WorkerId>(kMaxPlanExclude + 1, 7)}), UserError);
}

TEST(CoordinatorPlans, HeldRangesCountOnce) {
  Plans w(1);
  const auto a = w.reader("a");
  w.complete(a, {{0, 10}, {5, 10}});
  const auto st = version_status(w.c, "m", 1);
  for (const auto& h : st->holder_list) {
    if (h.worker == a) {
      EXPECT_EQ(h.chunks_held, 15u);
    }
  }
}

}  // namespace
}  // namespace tensorhub::coord
