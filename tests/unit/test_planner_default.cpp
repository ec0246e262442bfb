// DefaultPlanner without a Coordinator: a VersionState, a worker directory, source slots and a
// liveness predicate in, a decision out. And a Coordinator with another Planner plugged in.
#include <memory>
#include <set>

#include "coord_test_util.hpp"
#include "tensorhub/coord/planner.hpp"

namespace tensorhub::coord {
namespace {

WorkerInfo in_dc(const std::string& name, const std::string& dc) {
  WorkerInfo w;
  w.endpoint = "local:" + name;
  w.host = name;
  w.dc = dc;
  return w;
}

// "m" v1 of `chunks` chunks, published by origin 1; workers 1.. as given.
struct Fixture {
  explicit Fixture(std::uint32_t chunks = 4) : v("m", 1, "trainer", 1, kChunk), slots(0ms) {
    v.add_shard(request(1, "m", 1, {"trainer", 1, 0}, {{"w", chunks * kChunk}}));
  }
  void add(WorkerId id, const std::string& dc) { workers[id] = in_dc("w" + std::to_string(id), dc); }
  void relay(WorkerId id, std::vector<std::uint32_t> held = {}) {
    v.add_relay(id, {region(id, "w")});
    for (const auto c : held) v.mark_held(id, c);
  }
  AcquirePlan plan(WorkerId reader, const std::vector<std::uint32_t>& chunks, std::uint32_t max_assign = 16,
                   std::uint32_t k = 2) const {
    AcquirePlanRequest r;
    r.reader = reader;
    r.chunks = chunks;
    r.max_assign = max_assign;
    r.max_readers_per_source = k;
    return DefaultPlanner().plan_acquire(view(), r);
  }
  PlanView view() const {
    return PlanView{v, workers, slots, [this](WorkerId w) { return suspects.count(w) > 0; }};
  }

  VersionState v;
  WorkerDirectory workers;
  SourceSlots slots;
  std::set<WorkerId> suspects;
};

std::vector<WorkerId> holders_of(const AcquirePlan& p) {
  std::vector<WorkerId> out;
  for (const auto& a : p.assignments) out.push_back(a.holder);
  return out;
}

TEST(DefaultPlanner, AssignsUpToMaxAssignAndTheRestWaits) {
  Fixture f;
  f.add(1, "");
  f.add(2, "");
  const auto p = f.plan(2, {3, 1, 0}, 2);
  ASSERT_EQ(p.assignments.size(), 2u);
  EXPECT_EQ(p.assignments[0].chunk, 3u);
  EXPECT_EQ(p.assignments[1].chunk, 1u);
  EXPECT_EQ(p.waiting, std::vector<std::uint32_t>{0});
  EXPECT_TRUE(p.unavailable.empty());
  EXPECT_FALSE(p.seed_dc.has_value());
}

TEST(DefaultPlanner, ASlotTakenEarlierInTheCallCountsForLaterChunks) {
  Fixture f;
  f.add(1, "");
  f.add(2, "");
  f.add(3, "");
  f.add(4, "");
  f.relay(2, {0, 1});
  f.slots.add_read(1, 4, "");  // reader 4 holds the origin's only slot (K=1)
  // Reader 3: the origin is full, the relay free; its second chunk from the relay does not count
  // it twice against the relay's limit.
  const auto p = f.plan(3, {0, 1}, 16, 1);
  EXPECT_EQ(holders_of(p), (std::vector<WorkerId>{2, 2}));
}

TEST(DefaultPlanner, LocalFirstWaitsForABusyLocalHolderRatherThanCrossingTheWan) {
  Fixture f;
  f.add(1, "dc0");
  f.add(2, "dc1");
  f.add(3, "dc1");
  f.add(4, "dc1");
  f.relay(2, {0});
  f.slots.add_read(2, 4, "dc1");  // the local relay is full (K=1)
  const auto p = f.plan(3, {0}, 16, 1);
  EXPECT_TRUE(p.assignments.empty());
  EXPECT_EQ(p.waiting, std::vector<std::uint32_t>{0});
}

TEST(DefaultPlanner, TheFirstRelayingReaderOfADcBecomesItsSeed) {
  Fixture f;
  f.add(1, "dc0");
  f.add(2, "dc1");
  f.add(3, "dc1");
  f.relay(2);
  f.relay(3);
  const auto first = f.plan(2, {0, 1});
  EXPECT_EQ(holders_of(first), (std::vector<WorkerId>{1, 1}));
  EXPECT_EQ(first.seed_dc, std::optional<std::string>("dc1"));
  f.v.set_seed("dc1", 2);  // what the Coordinator applies
  const auto second = f.plan(3, {0, 1});
  EXPECT_TRUE(second.assignments.empty());  // the seed brings them over
  EXPECT_EQ(second.waiting, (std::vector<std::uint32_t>{0, 1}));
  EXPECT_FALSE(second.seed_dc.has_value());
}

TEST(DefaultPlanner, SuspectHoldersAreWaitedForAndFailedOnesMakeChunksUnavailable) {
  Fixture f;
  f.add(1, "");
  f.add(2, "");
  f.suspects.insert(1);
  const auto suspect = f.plan(2, {0});
  EXPECT_TRUE(suspect.assignments.empty());
  EXPECT_EQ(suspect.waiting, std::vector<std::uint32_t>{0});
  f.suspects.clear();
  f.v.add_failed_pair(2, 1);
  EXPECT_EQ(f.plan(2, {0}).unavailable, std::vector<std::uint32_t>{0});
  f.add(3, "");
  f.workers.erase(1);  // a holder that went is no source either
  EXPECT_EQ(f.plan(3, {0}).unavailable, std::vector<std::uint32_t>{0});
}

TEST(DefaultPlanner, IdleSlotsAtHoldersWithNothingWantedAreReleased) {
  Fixture f(2);
  f.add(1, "");
  f.add(2, "");
  f.add(3, "");
  f.relay(3);               // holds nothing yet, but will (it offered the tensor)
  SourceSlots sticky(10s);  // reader 2 keeps idle slots at the origin and at the relay
  for (const WorkerId h : {1, 3}) {
    sticky.add_read(h, 2, "");
    sticky.end_read(h, 2, Clock::now());
  }
  AcquirePlanRequest r;
  r.reader = 2;
  const std::vector<std::uint32_t> none;
  r.chunks = none;
  const auto p = DefaultPlanner().plan_acquire(PlanView{f.v, f.workers, sticky, {}}, r);
  EXPECT_EQ(p.release_slots, (std::vector<WorkerId>{1, 3}));  // nothing wanted at all
  const std::vector<std::uint32_t> two{0, 1};
  r.chunks = two;
  r.max_assign = 1;  // chunk 0 from the origin (its slot), chunk 1 waits
  const auto q = DefaultPlanner().plan_acquire(PlanView{f.v, f.workers, sticky, {}}, r);
  EXPECT_EQ(holders_of(q), std::vector<WorkerId>{1});
  EXPECT_EQ(q.waiting, std::vector<std::uint32_t>{1});
  EXPECT_TRUE(q.release_slots.empty());  // the relay will have chunk 1: reader 2 keeps its slot there
}

// A planner that never assigns: the Coordinator applies whatever the plugged-in planner decides.
class NothingPlanner final : public Planner {
 public:
  AcquirePlan plan_acquire(const PlanView&, const AcquirePlanRequest& r) const override {
    AcquirePlan p;
    p.unavailable.assign(r.chunks.begin(), r.chunks.end());
    return p;
  }
  bool release_idle_slot(const PlanView&, WorkerId, WorkerId, bool) const override { return true; }
  bool drop_seed_on_failure(const PlanView&, WorkerId) const override { return true; }
};

TEST(DefaultPlanner, TheCoordinatorUsesThePlannerOfItsConfig) {
  CoordinatorConfig cfg;
  cfg.planner = std::make_shared<NothingPlanner>();
  Coordinator c(cfg);
  const auto p = add_worker(c, "p");
  const auto r = add_worker(c, "r");
  publish_one(c, p, "m", 1);
  const auto reply = acquire(c, r, "m", 1, {0, 1});
  EXPECT_TRUE(reply.assignments.empty());
  EXPECT_EQ(reply.unavailable, (std::vector<std::uint32_t>{0, 1}));
}

}  // namespace
}  // namespace tensorhub::coord
