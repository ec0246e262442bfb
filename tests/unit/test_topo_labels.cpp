// lib/topo labels.hpp: the distance classes between two processes (a pure function) and how a
// rank's labels are resolved from hostname, environment and topology file.
#include <gtest/gtest.h>

#include <cstdlib>

#include "tensorhub/core/error.hpp"
#include "tensorhub/topo/labels.hpp"
#include "tensorhub/topo/topology_file.hpp"

namespace tensorhub::topo {
namespace {

Labels at(std::string dc, std::string rack, std::string host, std::string process = "") {
  Labels l;
  l.dc = std::move(dc);
  l.rack = std::move(rack);
  l.host = std::move(host);
  l.process = std::move(process);
  return l;
}

TEST(TopoDistance, Classes) {
  const Labels a = at("eu", "r1", "h1", "10@h1");
  EXPECT_EQ(distance_between(a, a), Distance::kSameProcess);
  EXPECT_EQ(distance_between(a, at("eu", "r1", "h1", "11@h1")), Distance::kSameHost);
  EXPECT_EQ(distance_between(a, at("eu", "r1", "h2", "10@h2")), Distance::kSameRack);
  EXPECT_EQ(distance_between(a, at("eu", "r2", "h1", "10@h1")), Distance::kSameDc);  // rack decides first
  EXPECT_EQ(distance_between(a, at("us", "r1", "h1", "10@h1")), Distance::kOtherDc);
}

TEST(TopoDistance, OrderedNearestFirstAndSymmetric) {
  EXPECT_LT(Distance::kSameProcess, Distance::kSameHost);
  EXPECT_LT(Distance::kSameHost, Distance::kSameRack);
  EXPECT_LT(Distance::kSameRack, Distance::kSameDc);
  EXPECT_LT(Distance::kSameDc, Distance::kOtherDc);
  const Labels xs[] = {at("eu", "r1", "h1", "1"), at("eu", "r1", "h1", "2"), at("eu", "r1", "h2"),
                       at("eu", "r2", "h3"),      at("us", "", "h4"),        at("", "", "h1")};
  for (const auto& x : xs) {
    for (const auto& y : xs) EXPECT_EQ(distance_between(x, y), distance_between(y, x));
  }
}

TEST(TopoDistance, UnlabelledAndUnknownProcess) {
  // No dc/rack labels anywhere: one rack in one DC.
  EXPECT_EQ(distance_between(at("", "", "h1"), at("", "", "h2")), Distance::kSameRack);
  // A labelled and an unlabelled DC differ.
  EXPECT_EQ(distance_between(at("eu", "", "h1"), at("", "", "h1")), Distance::kOtherDc);
  // Unknown process identities never claim "same process".
  EXPECT_EQ(distance_between(at("", "", "h1"), at("", "", "h1")), Distance::kSameHost);
  // numa and gpu labels do not change the class.
  Labels x = at("", "", "h1", "p");
  Labels y = x;
  y.numa = 1;
  y.gpu = 3;
  EXPECT_EQ(distance_between(x, y), Distance::kSameProcess);
}

TEST(TopoDistance, Names) {
  EXPECT_EQ(to_string(Distance::kSameProcess), "process");
  EXPECT_EQ(to_string(Distance::kSameHost), "host");
  EXPECT_EQ(to_string(Distance::kSameRack), "rack");
  EXPECT_EQ(to_string(Distance::kSameDc), "dc");
  EXPECT_EQ(to_string(Distance::kOtherDc), "other-dc");
}

TEST(TopoLabels, PrecedenceEnvOverFileOverNothing) {
  TopologyFile file;
  HostEntry h;
  h.host = "node7";
  h.dc = "eu-west";
  h.rack = "r12";
  file.hosts.push_back(h);

  LabelSources s;
  s.hostname = "node7";
  s.numa = 1;
  s.process = "42@node7";
  Labels l = resolve_labels(s);
  EXPECT_EQ(l.dc, "");
  EXPECT_EQ(l.rack, "");
  EXPECT_EQ(l.host, "node7");
  EXPECT_EQ(l.numa, 1);
  EXPECT_EQ(l.gpu, -1);
  EXPECT_EQ(l.process, "42@node7");

  s.file = &file;
  l = resolve_labels(s);
  EXPECT_EQ(l.dc, "eu-west");
  EXPECT_EQ(l.rack, "r12");

  s.env_rack = "r99";
  l = resolve_labels(s);
  EXPECT_EQ(l.dc, "eu-west");
  EXPECT_EQ(l.rack, "r99");

  s.env_dc = "";  // set but empty: the environment still wins
  l = resolve_labels(s);
  EXPECT_EQ(l.dc, "");

  s.hostname = "node8";  // not in the file
  s.env_dc.reset();
  s.env_rack.reset();
  l = resolve_labels(s);
  EXPECT_EQ(l.dc, "");
  EXPECT_EQ(l.rack, "");
}

TEST(TopoLabels, GpuFromEnvironment) {
  LabelSources s;
  s.hostname = "h";
  s.env_gpu = "3";
  EXPECT_EQ(resolve_labels(s).gpu, 3);
  s.env_gpu = "";
  EXPECT_EQ(resolve_labels(s).gpu, -1);
  for (const char* bad : {"x", "-1", "2a", " 1"}) {
    s.env_gpu = bad;
    EXPECT_THROW(resolve_labels(s), UserError) << bad;
  }
}

TEST(TopoLabels, LocalLabelsReadTheEnvironment) {
  ::setenv("TENSORHUB_DC", "dc-test", 1);
  ::setenv("TENSORHUB_RACK", "rack-test", 1);
  ::unsetenv("TENSORHUB_GPU");
  ::unsetenv("TENSORHUB_TOPOLOGY");
  const Labels l = local_labels();
  ::unsetenv("TENSORHUB_DC");
  ::unsetenv("TENSORHUB_RACK");
  EXPECT_EQ(l.dc, "dc-test");
  EXPECT_EQ(l.rack, "rack-test");
  EXPECT_FALSE(l.host.empty());
  EXPECT_NE(l.process.find("@" + l.host), std::string::npos);
  EXPECT_GE(l.numa, -1);
}

}  // namespace
}  // namespace tensorhub::topo
