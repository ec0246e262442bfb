// What `tensorhub probe` got wrong on real cloud exports, on a crafted fixture (aws-mixed.xml,
// tests/data/topo/README.md): RDMA NICs (EFA) rank above a plain Ethernet NIC (ENA) even one
// on the GPU's own switch; a VM's VGA with only an OpenCL device is not a GPU; a Trainium
// (1d0f class 0x0880, no OS device) is reported as an accelerator; a file without HostName is
// named after the file. Plus RDMA ranking on hand-made nodes and the JSON round trip.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "tensorhub/topo/node.hpp"
#include "tensorhub/topo/topology_file.hpp"

namespace tensorhub::topo {
namespace {

std::string fixture(const std::string& name) {
  std::string path = TENSORHUB_TOPO_DATA_DIR;  // built up in place: GCC 12's -Warray-bounds misfires
  path += '/';                                 // on string(...) + "/" + name under -O2 (PR 105651)
  path += name;
  return path;
}

TEST(TopoProbe, CloudVmGpusNicsAndAccelerators) {
  const NodeTopology n = load_hwloc_xml(fixture("aws-mixed.xml"));
  EXPECT_EQ(n.hostname, "aws-node");
  ASSERT_EQ(n.gpus.size(), 1u) << "the VGA with an OpenCL device must not count as a GPU";
  EXPECT_EQ(n.gpus[0].device_id, 0x2237);
  ASSERT_EQ(n.nics.size(), 3u);
  EXPECT_EQ(n.nics[0].os_devices, std::vector<std::string>{"ens5"});
  EXPECT_FALSE(rdma_capable(n.nics[0]));  // ENA: plain Ethernet
  EXPECT_TRUE(rdma_capable(n.nics[1]));   // EFA on the same host bridge
  EXPECT_TRUE(rdma_capable(n.nics[2]));   // EFA on the other NUMA node
  EXPECT_EQ(n.gpu_nic[0][0], Affinity::kSamePciSwitch);
  // The ENA shares the GPU's switch, but the EFA is the NIC to use; NUMA locality breaks ties.
  EXPECT_EQ(nearest_nics(n, 0), std::vector<std::size_t>{1});
  EXPECT_EQ(best_nic_affinity(n, 0), Affinity::kSameHostBridge);
  ASSERT_EQ(n.accelerators.size(), 1u);
  EXPECT_EQ(n.accelerators[0].vendor_id, 0x1d0f);
  EXPECT_EQ(n.accelerators[0].pci_class, 0x0880);
  EXPECT_TRUE(n.accelerators[0].os_devices.empty());
}

TEST(TopoProbe, RdmaNicsRankAboveEthernetOnHandMadeNodes) {
  NodeTopology n;
  n.gpus.resize(1);
  n.nics.resize(3);
  n.nics[0].os_devices = {"eno1"};               // 1 GbE management port, same switch
  n.nics[1].os_devices = {"mlx5_0", "ibp12s0"};  // InfiniBand, across sockets
  n.nics[2].vendor_id = 0x15b3;                  // ConnectX without a driver, same NUMA node
  n.gpu_nic = {{Affinity::kSamePciSwitch, Affinity::kCrossSocket, Affinity::kSameNuma}};
  EXPECT_EQ(nearest_nics(n, 0), std::vector<std::size_t>{2});
  EXPECT_EQ(best_nic_affinity(n, 0), Affinity::kSameNuma);
  n.nics[1].os_devices.clear();
  n.nics[2].vendor_id = 0x8086;  // no RDMA NIC left: every NIC competes
  EXPECT_EQ(nearest_nics(n, 0), std::vector<std::size_t>{0});
}

TEST(TopoProbe, FileWithoutHostNameIsNamedAfterTheFile) {
  std::ifstream in(fixture("cpu-2socket.xml"));
  std::stringstream ss;
  ss << in.rdbuf();
  std::string xml = ss.str();
  const std::string tag = "<info name=\"HostName\" value=\"cpu-node\" />";
  const auto at = xml.find(tag);
  ASSERT_NE(at, std::string::npos);
  xml.erase(at, tag.size());
  const std::string path = testing::TempDir() + "/node-x.xml";
  std::ofstream(path) << xml;
  EXPECT_EQ(load_hwloc_xml(path).hostname, "node-x");  // never this host's name
  std::remove(path.c_str());
}

TEST(TopoProbe, AcceleratorsSurviveTheJsonRoundTrip) {
  const NodeTopology n = load_hwloc_xml(fixture("aws-mixed.xml"));
  const nlohmann::json j = n;
  EXPECT_EQ(j["counts"]["accelerators"], 1);
  EXPECT_EQ(j["nics"][1]["rdma"], true);
  const NodeTopology back = j.get<NodeTopology>();
  EXPECT_EQ(back, n);
}

}  // namespace
}  // namespace tensorhub::topo
