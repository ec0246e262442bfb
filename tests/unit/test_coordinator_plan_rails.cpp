// Rail-aware plans (CoordinatorConfig::plan_rails, plan_book.hpp "Rails"): hosts of 2 GPUs with
// a NIC each. Stripe s enters a host through the GPU of rail s mod 2; the host's other GPU gets
// it from there (PlanSource::same_host), waiting for it at most plan_rail_wait; off its host a
// reader takes a member of the stripe's rail first.
#include <chrono>

#include "coord_test_util.hpp"

namespace tensorhub::coord {
namespace {

constexpr std::uint32_t kChunks = 32;  // 16 stripes of 2 chunks (one shard): stripe s = chunks [2s, 2s + 2)

struct Rails {
  Rails() : c(config()), p(add("p", "trainer", 0)) { publish_one(c, p, "m", 1, kChunks * kChunk); }

  CoordinatorConfig config() {
    CoordinatorConfig cfg;
    cfg.max_readers_per_source = 1;
    cfg.plan_fanout = 1;
    cfg.plan_rails = 2;
    cfg.plan_rail_wait = 100ms;
    cfg.lease = 0ms;
    cfg.clock = [this] { return now; };
    return cfg;
  }
  WorkerId add(const std::string& name, const std::string& host, int gpu) {
    WorkerInfo w;
    w.endpoint = "local:" + name;
    w.transport = "local";
    w.host = host;
    w.gpu = gpu;
    return c.register_worker(w);
  }
  WorkerId reader(const std::string& name, const std::string& host, int gpu) {
    const auto r = add(name, host, gpu);
    resolve(c, r, "m", {"g-" + name, 1, 0});
    c.offer_relay(RelayOffer{r, "m", 1, {region(r, "w")}, "progress:" + name});
    return r;
  }
  PlanReply plan(WorkerId r, std::vector<ChunkRange> want = {ChunkRange{0, kChunks}}) {
    return c.plan(PlanRequest{r, "m", 1, std::move(want), {}});
  }

  std::chrono::steady_clock::time_point now{};
  Coordinator c;
  WorkerId p;
};

// The source of every planned chunk (0: not planned), and whether it is on the reader's host.
struct Planned {
  std::vector<WorkerId> from = std::vector<WorkerId>(kChunks, 0);
  std::vector<bool> same_host = std::vector<bool>(kChunks, false);
};
Planned planned(const PlanReply& r) {
  Planned out;
  for (const auto& s : r.steps) {
    for (std::uint32_t c = s.range.first; c < s.range.first + s.range.count; ++c) {
      out.from[c] = r.sources.at(s.source).holder;
      out.same_host[c] = r.sources.at(s.source).same_host;
    }
  }
  return out;
}
bool even_stripe(std::uint32_t chunk) { return (chunk / 2) % 2 == 0; }

TEST(CoordinatorPlanRails, EachStripeEntersAHostThroughItsRail) {
  Rails w;
  const auto a = w.reader("a", "h1", 0);
  const auto b = w.reader("b", "h1", 1);  // registered before a plans: a waits for it

  // a (rail 0) first: the even stripes from the publisher; the odd ones wait for h1's rail-1 GPU.
  const auto pa = planned(w.plan(a));
  for (std::uint32_t c = 0; c < kChunks; ++c) {
    EXPECT_EQ(pa.from[c], even_stripe(c) ? w.p : 0u) << "chunk " << c;
    EXPECT_FALSE(pa.same_host[c]);
  }
  // b (rail 1): the odd stripes from the publisher, the even ones from a over the host.
  const auto pb = planned(w.plan(b));
  for (std::uint32_t c = 0; c < kChunks; ++c) {
    EXPECT_EQ(pb.from[c], even_stripe(c) ? a : w.p) << "chunk " << c;
    EXPECT_EQ(pb.same_host[c], even_stripe(c)) << "chunk " << c;
  }
  // a asks again for what waited: from b, on its host.
  std::vector<ChunkRange> odd;
  for (std::uint32_t s = 1; s < kChunks / 2; s += 2) odd.push_back(ChunkRange{2 * s, 2});
  const auto again = w.plan(a, odd);
  EXPECT_TRUE(again.waiting.empty());
  const auto pa2 = planned(again);
  for (std::uint32_t c = 0; c < kChunks; ++c) {
    if (!even_stripe(c)) {
      EXPECT_EQ(pa2.from[c], b) << "chunk " << c;
    }
  }
}

TEST(CoordinatorPlanRails, OffTheHostTheStripesRailComesFirstAndTheWaitIsBounded) {
  Rails w;
  const auto a = w.reader("a", "h1", 0);
  const auto b = w.reader("b", "h1", 1);
  (void)w.plan(a);
  (void)w.plan(b);
  // d (host h2, rail 0): the even stripes from a, h1's rail-0 GPU, not from b or the publisher;
  // the odd ones wait for h2's rail-1 GPU, e, registered but not pulling yet...
  (void)w.add("e", "h2", 1);
  const auto d = w.reader("d", "h2", 0);
  const auto first = w.plan(d);
  const auto pd = planned(first);
  for (std::uint32_t c = 0; c < kChunks; ++c) EXPECT_EQ(pd.from[c], even_stripe(c) ? a : 0u) << "chunk " << c;
  EXPECT_FALSE(first.waiting.empty());
  // ... which never comes: once plan_rail_wait is over, d takes them from h1's rail-1 GPU.
  w.now += 100ms;
  const auto late = w.plan(d, first.waiting);
  EXPECT_TRUE(late.waiting.empty());
  const auto pl = planned(late);
  for (std::uint32_t c = 0; c < kChunks; ++c) {
    if (!even_stripe(c)) {
      EXPECT_EQ(pl.from[c], b) << "chunk " << c;
    }
  }
}

TEST(CoordinatorPlanRails, NoWaitForARailNoWorkerOfItsHostHas) {
  Rails w;
  const auto a = w.reader("a", "h1", 0);  // h1 has no rail-1 GPU registered
  const auto pa = w.plan(a);
  EXPECT_TRUE(pa.waiting.empty());
  for (const auto from : planned(pa).from) EXPECT_EQ(from, w.p);
}

TEST(CoordinatorPlanRails, AReaderWithoutAGpuLabelHasNoRailAndNeverWaits) {
  Rails w;
  const auto a = w.reader("a", "h1", -1);
  const auto pa = w.plan(a);
  EXPECT_TRUE(pa.waiting.empty());
  for (const auto from : planned(pa).from) EXPECT_EQ(from, w.p);
}

TEST(CoordinatorPlanRails, ConfigIsValidated) {
  CoordinatorConfig cfg;
  cfg.plan_rails = 0;
  EXPECT_THROW(Coordinator{cfg}, UserError);
  cfg.plan_rails = 2;
  cfg.plan_rail_wait = -1ms;
  EXPECT_THROW(Coordinator{cfg}, UserError);
}

}  // namespace
}  // namespace tensorhub::coord
