// Coordinator: reading-group pull numbering (the coordinator numbers pulls; ResolveRequest::seq
// is ignored), pin shares of members that fail or go, group size bounds.
#include "coord_test_util.hpp"

namespace tensorhub::coord {
namespace {

FinishRequest finish_of(WorkerId reader, const std::string& model, std::uint64_t version, Group group,
                        std::uint64_t seq) {
  return FinishRequest{reader, model, version, std::move(group), seq};
}

// A group's pull #n is decided by its first member, "nothing found" included. Regression:
// member 0's pull #1 found nothing, then a version was published and member 1's pull #1 got
// it: one group pull, two outcomes, and the group's pin on v1 (taken for both members) outlived
// every read, so its publisher's unpublish waited for ever.
TEST(CoordinatorGroups, ThePullsOutcomeIsTheFirstMembersEvenWhenItFoundNothing) {
  Coordinator c;
  const auto p = add_worker(c, "p");
  const auto m0 = add_worker(c, "m0");
  const auto m1 = add_worker(c, "m1");
  // The hub's own counters, as it sends them (ignored by the coordinator).
  EXPECT_THROW(resolve(c, m0, "m", {"tp", 2, 0}, 1), NotFoundError);
  publish_one(c, p, "m", 1);
  try {
    resolve(c, m1, "m", {"tp", 2, 1}, 1);
    FAIL() << "pull #1 found nothing for member 0: so it does for member 1";
  } catch (const NotFoundError& e) {
    EXPECT_NE(std::string(e.what()).find("pull #1"), std::string::npos) << e.what();
  }
  EXPECT_EQ(c.unpublish(p, "m", 1), 0u) << "a pull that found nothing pins nothing";
  publish_one(c, p, "m", 2);
  // Pull #2: both members get v2, and once they finish it drains.
  const auto r1 = resolve(c, m1, "m", {"tp", 2, 1}, 2);
  const auto r0 = resolve(c, m0, "m", {"tp", 2, 0}, 2);
  EXPECT_EQ(r1.seq, 2u);
  EXPECT_EQ(r0.seq, r1.seq);
  EXPECT_EQ(r0.manifest->version, 2u);
  EXPECT_EQ(r0.manifest.get(), r1.manifest.get());  // one immutable manifest, shared: R readers cost no copy
  EXPECT_EQ(c.unpublish(p, "m", 2), 2u);            // both members still read it
  c.finish(finish_of(m1, "m", 2, {"tp", 2, 1}, r1.seq));
  c.finish(finish_of(m0, "m", 2, {"tp", 2, 0}, r0.seq));
  EXPECT_EQ(c.wait_drained(p, "m", 2, 0ms), 0u);
  EXPECT_FALSE(version_status(c, "m", 2).has_value());
}

TEST(CoordinatorGroups, FinishWithTheClientsOwnPullNumberFindsThePullOfThatVersion) {
  Coordinator c;
  const auto p = add_worker(c, "p");
  const auto r = add_worker(c, "r");
  EXPECT_THROW(resolve(c, r, "m", {"solo", 1, 0}, 1), NotFoundError);  // pull #1: nothing
  publish_one(c, p, "m", 1);
  EXPECT_EQ(resolve(c, r, "m", {"solo", 1, 0}, 1).seq, 2u);
  c.finish(finish_of(r, "m", 1, {"solo", 1, 0}, 7));  // a hub that still sends its own counter
  EXPECT_EQ(c.unpublish(p, "m", 1), 0u);
}

TEST(CoordinatorGroups, AMemberThatAskedForAnotherVersionGivesUpItsShare) {
  Coordinator c;
  const auto p = add_worker(c, "p");
  const auto m0 = add_worker(c, "m0");
  const auto m1 = add_worker(c, "m1");
  publish_one(c, p, "m", 1);
  publish_one(c, p, "m", 2);
  const auto r0 = resolve(c, m0, "m", {"tp", 2, 0}, 0, 1);
  EXPECT_THROW(resolve(c, m1, "m", {"tp", 2, 1}, 0, 2), UserError);
  c.finish(finish_of(m0, "m", 1, {"tp", 2, 0}, r0.seq));
  EXPECT_EQ(c.unpublish(p, "m", 1), 0u);  // no share of pull #1 left behind
}

TEST(CoordinatorGroups, AMemberThatLeavesBeforeJoiningGivesUpItsShare) {
  Coordinator c;
  const auto p = add_worker(c, "p");
  const auto m0 = add_worker(c, "m0");
  const auto m1 = add_worker(c, "m1");
  publish_one(c, p, "m", 1);
  // Pull #1 of both members.
  c.finish(finish_of(m0, "m", 1, {"tp", 2, 0}, resolve(c, m0, "m", {"tp", 2, 0}).seq));
  c.finish(finish_of(m1, "m", 1, {"tp", 2, 1}, resolve(c, m1, "m", {"tp", 2, 1}).seq));
  // Pull #2: m0 resolves and finishes, m1 leaves without joining it.
  const auto r0 = resolve(c, m0, "m", {"tp", 2, 0});
  EXPECT_EQ(r0.seq, 2u);
  c.finish(finish_of(m0, "m", 1, {"tp", 2, 0}, r0.seq));
  EXPECT_EQ(c.unpublish(p, "m", 1), 1u);  // m1's share of pull #2
  c.deregister_worker(m1);
  EXPECT_EQ(c.wait_drained(p, "m", 1, 0ms), 0u);
}

TEST(CoordinatorGroups, GroupSizesAreBounded) {
  Coordinator c;
  const auto p = add_worker(c, "p");
  const auto r = add_worker(c, "r");
  const auto q = add_worker(c, "q");
  publish_one(c, p, "m", 1);
  EXPECT_THROW(resolve(c, r, "m", {"g", kMaxGroupSize + 1, 0}), UserError);
  EXPECT_THROW(c.publish(request(p, "m", 2, {"t", kMaxGroupSize + 1, 0}, {{"w", 10}})), UserError);
  // Within kMaxGroupSize, but more members than workers exist: no one could complete it.
  EXPECT_THROW(resolve(c, r, "m", {"g", kMaxGroupSize, 0}), UserError);
  EXPECT_EQ(resolve(c, r, "m", {"g", 3, 0}).manifest->version, 1u);
  c.finish(FinishRequest{r, "m", 1, {"g", 3, 0}, 1});
  // A third worker in a group of 2 that both members already joined.
  const auto s = add_worker(c, "s");
  resolve(c, q, "m", {"pair", 2, 0});
  resolve(c, s, "m", {"pair", 2, 1});
  const auto t = add_worker(c, "t");
  EXPECT_THROW(resolve(c, t, "m", {"pair", 2, 1}), UserError);
}

TEST(CoordinatorGroups, FinishMisuseIsAUserError) {
  Coordinator c;
  const auto p = add_worker(c, "p");
  const auto r = add_worker(c, "r");
  const auto q = add_worker(c, "q");
  publish_one(c, p, "m", 1);
  EXPECT_THROW(c.finish(finish_of(r, "m", 1, {"g", 2, 0}, 1)), UserError);  // no resolve
  const auto got = resolve(c, r, "m", {"g", 2, 0});
  EXPECT_THROW(c.finish(finish_of(q, "m", 1, {"g", 2, 1}, got.seq)), UserError);  // q did not resolve
  EXPECT_NO_THROW(c.finish(finish_of(r, "m", 1, {"g", 2, 0}, got.seq)));
  EXPECT_THROW(c.finish(finish_of(r, "m", 1, {"g", 2, 0}, got.seq)), UserError);  // twice
}

}  // namespace
}  // namespace tensorhub::coord
