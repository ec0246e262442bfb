// The control calls of a plan-based pull do not grow with the chunk count: a reader loop (no
// data) pulling a 25,600-chunk version makes at most 16 calls, whether it reads from the
// publisher or from a relay that is still pulling.
#include "coord_test_util.hpp"

namespace tensorhub::coord {
namespace {

constexpr std::uint32_t kBig = 25600;

// The in-process reader side of a plan-based pull: resolve, offer, plan, a few held-range
// completes (as if the bytes arrived in four waves), release, finish. Returns the calls made.
std::uint32_t pull_by_plan(Coordinator& c, WorkerId r, const std::string& group) {
  std::uint32_t calls = 0;
  const auto res = c.resolve(ResolveRequest{r, "m", std::nullopt, {group, 1, 0}, 0});
  ++calls;
  const auto chunks = static_cast<std::uint32_t>(res.manifest->chunks.size());
  c.offer_relay(RelayOffer{r, "m", res.manifest->version, {region(r, "w")}, "progress"});
  ++calls;
  const auto plan = c.plan(PlanRequest{r, "m", res.manifest->version, {ChunkRange{0, chunks}}, {}});
  ++calls;
  EXPECT_TRUE(plan.waiting.empty());
  EXPECT_TRUE(plan.unavailable.empty());
  EXPECT_LE(plan.steps.size(), 16u) << "ranges, not chunks";
  for (std::uint32_t wave = 0; wave < 4; ++wave) {
    CompleteRequest q;
    q.reader = r;
    q.model = "m";
    q.version = res.manifest->version;
    q.held_ranges.push_back(ChunkRange{wave * chunks / 4, chunks / 4});
    if (wave == 3) {
      for (const auto& s : plan.sources) q.release_sources.push_back(s.holder);
    }
    c.complete(q);
    ++calls;
  }
  c.finish(FinishRequest{r, "m", res.manifest->version, {group, 1, 0}, res.seq});
  ++calls;
  return calls;
}

TEST(CoordinatorPlanCalls, A25600ChunkPullTakesAtMost16ControlCalls) {
  CoordinatorConfig cfg;
  cfg.max_readers_per_source = 1;
  cfg.lease = 0ms;
  Coordinator c(cfg);
  const auto p = add_worker(c, "p");
  publish_one(c, p, "m", 1, std::uint64_t{kBig} * kChunk);
  const auto a = add_worker(c, "a");
  const auto b = add_worker(c, "b");
  EXPECT_LE(pull_by_plan(c, a, "ga"), 16u);
  EXPECT_LE(pull_by_plan(c, b, "gb"), 16u);
  const auto st = version_status(c, "m", 1);
  ASSERT_TRUE(st);
  EXPECT_EQ(st->pins, 0u);
  for (const auto& h : st->holder_list) EXPECT_EQ(h.chunks_held, kBig) << "worker " << h.worker;
}

}  // namespace
}  // namespace tensorhub::coord
