// lib/topo topology_file.hpp: the file `tensorhub probe --out` writes. Round trips of every
// part (node summaries from the XML fixtures, labels, the MPI_Get matrix with its null
// diagonal), a hand-written labels-only file, and typed errors naming the file.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>

#include "tensorhub/topo/error.hpp"
#include "tensorhub/topo/topology_file.hpp"

namespace tensorhub::topo {
namespace {

std::string fixture(const std::string& name) { return std::string(TENSORHUB_TOPO_DATA_DIR) + "/" + name; }

std::string temp(const std::string& name) { return testing::TempDir() + "/" + name; }

void write_text(const std::string& path, const std::string& text) {
  std::ofstream f(path);
  f << text;
}

TopologyFile sample() {
  TopologyFile f;
  f.created = "2025-01-01T00:00:00Z";
  f.command = "mpirun -n 2 tensorhub probe --out topo.json";
  for (int r = 0; r < 2; ++r) {
    RankEntry e;
    e.rank = r;
    e.labels.host = "gpu8-node";
    e.labels.dc = "eu";
    e.labels.rack = "r1";
    e.labels.numa = r;
    e.labels.gpu = r;
    e.labels.process = std::to_string(100 + r) + "@gpu8-node";
    f.ranks.push_back(e);
  }
  HostEntry h;
  h.host = "gpu8-node";
  h.dc = "eu";
  h.rack = "r1";
  h.leader = 0;
  h.ranks = {0, 1};
  h.topology = load_hwloc_xml(fixture("gpu8-nic8-2socket.xml"));
  f.hosts.push_back(h);
  GetMatrix m;
  m.endpoints = {0, 1};
  m.sizes = {8, 1024};
  m.iterations = 10;
  m.warmup = 2;
  m.window = 16;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  m.bandwidth_gbps = {{{nan, nan}, {0.01, 1.5}}, {{0.02, 1.6}, {nan, nan}}};
  m.latency_us = {{{nan, nan}, {2.0, 3.0}}, {{2.5, 3.5}, {nan, nan}}};
  f.matrix = m;
  return f;
}

TEST(TopoFile, NodeTopologyJsonRoundTrip) {
  for (const char* name : {"cpu-2socket.xml", "gpu8-nic8-2socket.xml", "vm-1socket-live.xml"}) {
    const NodeTopology n = load_hwloc_xml(fixture(name));
    const nlohmann::json j = n;
    EXPECT_EQ(j.at("counts").at("gpus").get<std::size_t>(), n.gpus.size()) << name;
    EXPECT_EQ(j.get<NodeTopology>(), n) << name;
  }
  const nlohmann::json j = load_hwloc_xml(fixture("gpu8-nic8-2socket.xml"));
  EXPECT_EQ(j.at("gpus").at(3).at("nearest_nics"), nlohmann::json::array({3}));
  EXPECT_EQ(j.at("gpus").at(3).at("nic_affinity"), "pci-switch");
  EXPECT_EQ(j.at("gpus").at(0).at("vendor_id"), "10de");
  EXPECT_EQ(j.at("gpu_nic_affinity").at(0).at(4), "cross-socket");
}

TEST(TopoFile, SaveAndLoadBack) {
  const TopologyFile f = sample();
  const std::string path = temp("topo-roundtrip.json");
  save_topology_file(path, f);
  const TopologyFile g = load_topology_file(path);
  EXPECT_EQ(g.version, kTopologyFileVersion);
  EXPECT_EQ(g.created, f.created);
  EXPECT_EQ(g.command, f.command);
  EXPECT_EQ(g.ranks, f.ranks);
  EXPECT_EQ(g.hosts, f.hosts);
  ASSERT_TRUE(g.matrix.has_value());
  const GetMatrix& m = *g.matrix;
  EXPECT_EQ(m.scope, "rank");
  EXPECT_EQ(m.endpoints, f.matrix->endpoints);
  EXPECT_EQ(m.sizes, f.matrix->sizes);
  EXPECT_EQ(m.window, 16u);
  EXPECT_TRUE(std::isnan(m.bandwidth_gbps[0][0][1]));  // diagonal: null in the file
  EXPECT_DOUBLE_EQ(m.bandwidth_gbps[1][0][1], 1.6);
  EXPECT_DOUBLE_EQ(m.latency_us[0][1][0], 2.0);
  ASSERT_NE(g.find_host("gpu8-node"), nullptr);
  EXPECT_EQ(g.find_host("gpu8-node")->topology->gpus.size(), 8u);
  EXPECT_EQ(g.find_host("elsewhere"), nullptr);
  std::remove(path.c_str());
}

TEST(TopoFile, HandWrittenLabelsFile) {
  const TopologyFile f = load_topology_file(fixture("cluster-labels.json"));
  ASSERT_EQ(f.hosts.size(), 4u);
  EXPECT_TRUE(f.ranks.empty());
  EXPECT_FALSE(f.matrix.has_value());
  const HostEntry* c1 = f.find_host("gpu-c1");
  ASSERT_NE(c1, nullptr);
  EXPECT_EQ(c1->dc, "us-east");
  EXPECT_EQ(c1->leader, -1);
  EXPECT_FALSE(c1->topology.has_value());
  // Labels from the file give the planner's distance classes.
  auto labels = [&](const char* host) {
    LabelSources s;
    s.hostname = host;
    s.file = &f;
    return resolve_labels(s);
  };
  EXPECT_EQ(distance_between(labels("gpu-a1"), labels("gpu-a2")), Distance::kSameRack);
  EXPECT_EQ(distance_between(labels("gpu-a1"), labels("gpu-b1")), Distance::kSameDc);
  EXPECT_EQ(distance_between(labels("gpu-a1"), labels("gpu-c1")), Distance::kOtherDc);
}

TEST(TopoFile, ErrorsNameTheFile) {
  const std::string missing = temp("no-such-topo.json");
  try {
    load_topology_file(missing);
    FAIL() << "no exception";
  } catch (const TopologyFileError& e) {
    EXPECT_EQ(e.path(), missing);
    EXPECT_NE(std::string(e.what()).find(missing), std::string::npos);
  }
  const std::string bad = temp("bad-topo.json");
  const std::pair<const char*, const char*> cases[] = {
      {"{ not json", "not JSON"},
      {"{\"hosts\": []}", "not a TensorHub topology file"},
      {"{\"format\": \"tensorhub-topology\", \"version\": 99}", "newer TensorHub"},
      {"{\"format\": \"tensorhub-topology\", \"version\": 1, \"ranks\": [{\"host\": \"h\"}]}", "rank"},
      {"{\"format\": \"tensorhub-topology\", \"version\": 1, \"hosts\": [{\"host\": \"h\", \"topology\": "
       "{\"gpus\": [{}], \"gpu_nic_affinity\": [[\"near\"]]}}]}",
       "gpu_nic_affinity"},
  };
  for (const auto& [text, expect] : cases) {
    write_text(bad, text);
    try {
      load_topology_file(bad);
      ADD_FAILURE() << "no exception for " << text;
    } catch (const TopologyFileError& e) {
      EXPECT_NE(std::string(e.what()).find(bad), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(expect), std::string::npos) << e.what();
    }
  }
  std::remove(bad.c_str());
  EXPECT_THROW(save_topology_file("/nonexistent-dir/topo.json", sample()), TopologyFileError);
}

}  // namespace
}  // namespace tensorhub::topo
