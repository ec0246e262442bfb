// lib/coord planner.hpp: distance classes between workers, and choose_source's ordering rules:
// nearest first, the per-source reader limit K (with the exemption for a holder already
// serving this reader), least loaded, relay before origin on ties, shallower depth, lower id,
// and nullopt when every candidate is full.
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "tensorhub/coord/planner.hpp"
#include "tensorhub/topo/labels.hpp"

namespace tensorhub::coord {
namespace {

WorkerInfo at(std::string endpoint, std::string host, std::string rack, std::string dc) {
  WorkerInfo w;
  w.endpoint = std::move(endpoint);
  w.transport = "local";
  w.host = std::move(host);
  w.rack = std::move(rack);
  w.dc = std::move(dc);
  return w;
}

Candidate cand(WorkerId id, Distance d, std::uint32_t active = 0, bool origin = false, bool serves = false,
               std::uint32_t depth = 1) {
  Candidate c;
  c.holder = id;
  c.distance = d;
  c.active_readers = active;
  c.origin = origin;
  c.serves_reader = serves;
  c.depth = origin ? 0 : depth;
  return c;
}

std::optional<WorkerId> chosen(const std::vector<Candidate>& cands, std::uint32_t k) {
  const auto i = choose_source(cands, k);
  if (!i) return std::nullopt;
  EXPECT_LT(*i, cands.size());
  return cands[*i].holder;
}

// ---- distance_between ------------------------------------------------------------------------

TEST(Distance, Classes) {
  const auto a = at("ep:a", "h1", "r1", "dc1");
  EXPECT_EQ(distance_between(a, a), Distance::kSameProcess);
  EXPECT_EQ(distance_between(a, at("ep:b", "h1", "r1", "dc1")), Distance::kSameHost);
  EXPECT_EQ(distance_between(a, at("ep:b", "h2", "r1", "dc1")), Distance::kSameRack);
  EXPECT_EQ(distance_between(a, at("ep:b", "h2", "r2", "dc1")), Distance::kSameDc);
  EXPECT_EQ(distance_between(a, at("ep:b", "h2", "r2", "dc2")), Distance::kOtherDc);
}

TEST(Distance, TheWidestDifferenceWins) {
  const auto a = at("ep:a", "h1", "r1", "dc1");
  // Same host name but another DC is still another DC.
  EXPECT_EQ(distance_between(a, at("ep:a", "h1", "r1", "dc2")), Distance::kOtherDc);
  // Same host name in another rack is another rack.
  EXPECT_EQ(distance_between(a, at("ep:a", "h1", "r2", "dc1")), Distance::kSameDc);
}

TEST(Distance, IsSymmetric) {
  const std::vector<WorkerInfo> ws{at("ep:a", "h1", "r1", "dc1"), at("ep:b", "h1", "r1", "dc1"),
                                   at("ep:c", "h2", "r1", "dc1"), at("ep:d", "h3", "r2", "dc1"),
                                   at("ep:e", "h4", "r3", "dc2")};
  for (const auto& x : ws) {
    for (const auto& y : ws) EXPECT_EQ(distance_between(x, y), distance_between(y, x));
  }
}

TEST(Distance, EmptyLabelsMatchEachOther) {
  const auto a = at("ep:a", "h1", "", "");
  EXPECT_EQ(distance_between(a, at("ep:b", "h2", "", "")), Distance::kSameRack);
  EXPECT_EQ(distance_between(a, at("ep:b", "h1", "", "")), Distance::kSameHost);
  EXPECT_EQ(distance_between(a, at("ep:b", "h2", "r1", "")), Distance::kSameDc);
  EXPECT_EQ(distance_between(a, at("ep:b", "h2", "", "dc1")), Distance::kOtherDc);
}

// One distance definition: coord's is topo's, on the labels of the worker.
static_assert(std::is_same_v<Distance, topo::Distance>);

TEST(Distance, LabelsOfAWorker) {
  auto w = at("ep:a", "h1", "r1", "dc1");
  w.numa = 1;
  w.gpu = 3;
  const topo::Labels l = labels_of(w);
  EXPECT_EQ(l.dc, "dc1");
  EXPECT_EQ(l.rack, "r1");
  EXPECT_EQ(l.host, "h1");
  EXPECT_EQ(l.numa, 1);
  EXPECT_EQ(l.gpu, 3);
  EXPECT_EQ(l.process, "ep:a");  // the transport endpoint identifies the process
  EXPECT_EQ(labels_of(WorkerInfo{}).numa, -1);
  EXPECT_EQ(labels_of(WorkerInfo{}).gpu, -1);
}

TEST(Distance, IsTopoDistanceOnTheLabels) {
  const std::vector<WorkerInfo> ws{at("ep:a", "h1", "r1", "dc1"), at("ep:b", "h1", "r1", "dc1"),
                                   at("ep:c", "h2", "r1", "dc1"), at("ep:d", "h3", "r2", "dc1"),
                                   at("ep:e", "h4", "r3", "dc2"), at("ep:f", "h5", "", ""),
                                   at("", "h5", "", "")};
  for (const auto& x : ws) {
    for (const auto& y : ws) EXPECT_EQ(distance_between(x, y), topo::distance_between(labels_of(x), labels_of(y)));
  }
  // Unknown process identities never make two workers the same process.
  EXPECT_EQ(distance_between(at("", "h5", "", ""), at("", "h5", "", "")), Distance::kSameHost);
  // NUMA and GPU labels do not change the class.
  auto a = at("ep:a", "h1", "r1", "dc1");
  auto b = at("ep:b", "h1", "r1", "dc1");
  a.numa = 0;
  b.numa = 1;
  a.gpu = 0;
  EXPECT_EQ(distance_between(a, b), Distance::kSameHost);
}

// ---- choose_source ---------------------------------------------------------------------------

TEST(ChooseSource, NoCandidatesGivesNullopt) { EXPECT_EQ(chosen({}, 2), std::nullopt); }

TEST(ChooseSource, NearestClassFirstEvenIfBusier) {
  const std::vector<Candidate> c{cand(1, Distance::kOtherDc, 0), cand(2, Distance::kSameRack, 1),
                                 cand(3, Distance::kSameDc, 0)};
  EXPECT_EQ(chosen(c, 2), 2u);
  const std::vector<Candidate> d{cand(1, Distance::kSameHost, 1), cand(2, Distance::kSameProcess, 1)};
  EXPECT_EQ(chosen(d, 4), 2u);
}

TEST(ChooseSource, HoldersAtTheLimitAreSkipped) {
  // The near holder already serves K=2 other readers: fall back to the far one.
  const std::vector<Candidate> c{cand(1, Distance::kSameHost, 2), cand(2, Distance::kOtherDc, 0)};
  EXPECT_EQ(chosen(c, 2), 2u);
  // With K=3 the near one still has room.
  EXPECT_EQ(chosen(c, 3), 1u);
}

TEST(ChooseSource, LimitOfOne) {
  const std::vector<Candidate> c{cand(1, Distance::kSameHost, 1, true), cand(2, Distance::kSameRack, 0)};
  EXPECT_EQ(chosen(c, 1), 2u);
}

TEST(ChooseSource, AllFullGivesNullopt) {
  const std::vector<Candidate> c{cand(1, Distance::kSameHost, 2), cand(2, Distance::kSameRack, 3, true),
                                 cand(3, Distance::kOtherDc, 2)};
  EXPECT_EQ(chosen(c, 2), std::nullopt);
  EXPECT_EQ(chosen(c, 1), std::nullopt);
}

TEST(ChooseSource, HolderAlreadyServingTheReaderIsExemptFromTheLimit) {
  const std::vector<Candidate> c{cand(1, Distance::kSameHost, 2, false, /*serves=*/true),
                                 cand(2, Distance::kOtherDc, 0)};
  EXPECT_EQ(chosen(c, 2), 1u);
  // Even far above the limit.
  const std::vector<Candidate> d{cand(1, Distance::kSameHost, 9, true, /*serves=*/true)};
  EXPECT_EQ(chosen(d, 1), 1u);
}

TEST(ChooseSource, ServingTheReaderDoesNotBeatDistance) {
  const std::vector<Candidate> c{cand(1, Distance::kSameDc, 1, false, /*serves=*/true),
                                 cand(2, Distance::kSameHost, 1)};
  EXPECT_EQ(chosen(c, 2), 2u);
}

TEST(ChooseSource, LeastLoadedWithinADistanceClass) {
  const std::vector<Candidate> c{cand(1, Distance::kSameRack, 3), cand(2, Distance::kSameRack, 1),
                                 cand(3, Distance::kSameRack, 2)};
  EXPECT_EQ(chosen(c, 8), 2u);
}

TEST(ChooseSource, RelayBeforeOriginOnTies) {
  const std::vector<Candidate> c{cand(1, Distance::kSameHost, 1, /*origin=*/true),
                                 cand(7, Distance::kSameHost, 1, /*origin=*/false)};
  EXPECT_EQ(chosen(c, 2), 7u);
  // Not when the origin is less loaded.
  const std::vector<Candidate> d{cand(1, Distance::kSameHost, 0, true), cand(7, Distance::kSameHost, 1, false)};
  EXPECT_EQ(chosen(d, 2), 1u);
  // Nor when it is nearer.
  const std::vector<Candidate> e{cand(1, Distance::kSameHost, 1, true), cand(7, Distance::kSameRack, 0, false)};
  EXPECT_EQ(chosen(e, 2), 1u);
}

TEST(ChooseSource, ShallowerRelayThenLowerIdBreakTies) {
  const std::vector<Candidate> c{cand(5, Distance::kSameHost, 0, false, false, 3),
                                 cand(9, Distance::kSameHost, 0, false, false, 1),
                                 cand(4, Distance::kSameHost, 0, false, false, 2)};
  EXPECT_EQ(chosen(c, 2), 9u);
  const std::vector<Candidate> d{cand(8, Distance::kSameHost, 0), cand(3, Distance::kSameHost, 0),
                                 cand(6, Distance::kSameHost, 0)};
  EXPECT_EQ(chosen(d, 2), 3u);
}

TEST(ChooseSource, AHolderInAnotherDcServesOneReaderOfTheAskingDcWhateverK) {
  Candidate far = cand(1, Distance::kOtherDc, 0, true);
  far.wan = true;
  EXPECT_EQ(chosen({far}, 4), 1u);
  far.active_readers = 1;  // another reader of our DC (the seed) is served across the WAN
  EXPECT_EQ(chosen({far}, 4), std::nullopt);
  far.serves_reader = true;  // ...unless it is us
  EXPECT_EQ(chosen({far}, 4), 1u);
}

TEST(ChooseSource, ResultDoesNotDependOnCandidateOrder) {
  std::vector<Candidate> c{cand(1, Distance::kSameRack, 0, true), cand(2, Distance::kSameHost, 1, true),
                           cand(3, Distance::kSameHost, 1, false, false, 2), cand(4, Distance::kSameHost, 2),
                           cand(5, Distance::kSameHost, 1, false, false, 1)};
  EXPECT_EQ(chosen(c, 2), 5u);
  std::reverse(c.begin(), c.end());
  EXPECT_EQ(chosen(c, 2), 5u);
  std::rotate(c.begin(), c.begin() + 2, c.end());
  EXPECT_EQ(chosen(c, 2), 5u);
}

}  // namespace
}  // namespace tensorhub::coord
