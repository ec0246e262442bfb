// lib/topo discovery on hwloc XML fixtures (tests/data/topo, see its README.md): CPU counts,
// GPU and NIC detection, GPU<->NIC pairing and affinity classes, errors for bad files, and the
// live machine.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "tensorhub/topo/error.hpp"
#include "tensorhub/topo/node.hpp"

namespace tensorhub::topo {
namespace {

std::string fixture(const std::string& name) {
  std::string path = TENSORHUB_TOPO_DATA_DIR;  // built up in place: GCC 12's -Warray-bounds misfires
  path += '/';                                 // on string(...) + "/" + name under -O2 (PR 105651)
  path += name;
  return path;
}

TEST(TopoXml, TwoSocketCpuNode) {
  const NodeTopology n = load_hwloc_xml(fixture("cpu-2socket.xml"));
  EXPECT_EQ(n.hostname, "cpu-node");
  EXPECT_EQ(n.source, fixture("cpu-2socket.xml"));
  EXPECT_EQ(n.packages, 2u);
  EXPECT_EQ(n.numa_nodes, 2u);
  EXPECT_EQ(n.cores, 8u);
  EXPECT_EQ(n.pus, 16u);
  EXPECT_EQ(n.memory_bytes, 2ull << 30);
  // The BMC's VGA (ASPEED, class 0x0300) is not a GPU; the NVMe disk is neither.
  EXPECT_TRUE(n.gpus.empty());
  ASSERT_EQ(n.nics.size(), 1u);
  const Device& nic = n.nics[0];
  EXPECT_EQ(nic.pci_busid, "0000:01:00.0");
  EXPECT_EQ(nic.vendor_id, 0x8086);
  EXPECT_EQ(nic.pci_class, 0x0200);
  EXPECT_EQ(nic.vendor, "Intel Corporation");
  EXPECT_EQ(nic.os_devices, std::vector<std::string>{"ens1f0"});
  EXPECT_EQ(nic.numa, 0);
  EXPECT_EQ(nic.package, 0);
  EXPECT_TRUE(n.gpu_nic.empty());
}

TEST(TopoXml, EightGpuServerCountsAndDevices) {
  const NodeTopology n = load_hwloc_xml(fixture("gpu8-nic8-2socket.xml"));
  EXPECT_EQ(n.hostname, "gpu8-node");
  EXPECT_EQ(n.packages, 2u);
  EXPECT_EQ(n.numa_nodes, 4u);
  EXPECT_EQ(n.cores, 8u);
  EXPECT_EQ(n.pus, 16u);
  ASSERT_EQ(n.gpus.size(), 8u);
  ASSERT_EQ(n.nics.size(), 8u);
  ASSERT_EQ(n.gpu_nic.size(), 8u);
  for (std::size_t i = 0; i < 8; ++i) {
    const Device& g = n.gpus[i];
    EXPECT_EQ(g.vendor_id, 0x10de) << i;
    EXPECT_EQ(g.pci_class, 0x0302) << i;
    EXPECT_EQ(g.vendor, "NVIDIA Corporation");
    EXPECT_EQ(g.model, "GH100 [H100 SXM5 80GB]");
    EXPECT_EQ(g.package, static_cast<int>(i / 4)) << i;
    EXPECT_EQ(g.numa, static_cast<int>(i / 4 * 2 + (i % 4) / 2)) << i;
    const Device& nic = n.nics[i];
    EXPECT_EQ(nic.vendor_id, 0x15b3) << i;
    EXPECT_EQ(nic.pci_class, 0x0207) << i;
    ASSERT_EQ(nic.os_devices.size(), 2u) << i;  // one NIC, two OS devices
    EXPECT_EQ(nic.os_devices[0], "mlx5_" + std::to_string(i));
    EXPECT_EQ(nic.numa, g.numa) << i;
    EXPECT_EQ(nic.package, g.package) << i;
    ASSERT_EQ(n.gpu_nic[i].size(), 8u);
  }
  EXPECT_EQ(n.gpus[0].pci_busid, "0000:03:00.0");
  EXPECT_EQ(n.nics[0].pci_busid, "0000:04:00.0");
  EXPECT_EQ(n.gpus[7].pci_busid, "0000:e3:00.0");
  // GPU 0: a CUDA coprocessor; GPU 6: an NVML GPU device; GPU 7: no driver, found by class.
  EXPECT_EQ(n.gpus[0].os_devices, std::vector<std::string>{"cuda0"});
  EXPECT_EQ(n.gpus[6].os_devices, std::vector<std::string>{"nvml6"});
  EXPECT_TRUE(n.gpus[7].os_devices.empty());
}

TEST(TopoXml, EightGpuServerPairsEachGpuWithItsSwitchNic) {
  const NodeTopology n = load_hwloc_xml(fixture("gpu8-nic8-2socket.xml"));
  for (std::size_t g = 0; g < 8; ++g) {
    EXPECT_EQ(nearest_nics(n, g), std::vector<std::size_t>{g}) << "GPU " << g;
    EXPECT_EQ(best_nic_affinity(n, g), Affinity::kSamePciSwitch) << "GPU " << g;
  }
}

TEST(TopoXml, EightGpuServerAffinityClasses) {
  // Package p: NUMA 2p holds one host bridge with the switches of pairs 4p and 4p+1;
  // NUMA 2p+1 holds two host bridges, one switch each (pairs 4p+2, 4p+3).
  const NodeTopology n = load_hwloc_xml(fixture("gpu8-nic8-2socket.xml"));
  const auto& a = n.gpu_nic;
  EXPECT_EQ(a[0][0], Affinity::kSamePciSwitch);
  EXPECT_EQ(a[0][1], Affinity::kSameHostBridge);
  EXPECT_EQ(a[1][0], Affinity::kSameHostBridge);
  EXPECT_EQ(a[2][3], Affinity::kSameNuma);  // two host bridges on NUMA node 1
  EXPECT_EQ(a[3][2], Affinity::kSameNuma);
  EXPECT_EQ(a[0][2], Affinity::kSamePackage);
  EXPECT_EQ(a[3][1], Affinity::kSamePackage);
  EXPECT_EQ(a[0][4], Affinity::kCrossSocket);
  EXPECT_EQ(a[7][0], Affinity::kCrossSocket);
  EXPECT_EQ(a[4][5], Affinity::kSameHostBridge);
  EXPECT_EQ(a[6][7], Affinity::kSameNuma);
  // The matrix is symmetric in class: affinity(g_i, nic_j) == affinity(g_j, nic_i).
  for (std::size_t i = 0; i < 8; ++i) {
    for (std::size_t j = 0; j < 8; ++j) EXPECT_EQ(a[i][j], a[j][i]) << i << "," << j;
  }
}

TEST(TopoXml, RealVmExport) {
  // `lstopo --of xml` on the 2-core Debian 12 VM this project is developed on.
  const NodeTopology n = load_hwloc_xml(fixture("vm-1socket-live.xml"));
  EXPECT_EQ(n.hostname, "vm");
  EXPECT_EQ(n.packages, 1u);
  EXPECT_EQ(n.numa_nodes, 1u);
  EXPECT_EQ(n.cores, 2u);
  EXPECT_EQ(n.pus, 2u);
  EXPECT_TRUE(n.gpus.empty());
  ASSERT_EQ(n.nics.size(), 1u);
  EXPECT_EQ(n.nics[0].pci_busid, "0000:00:03.0");
  EXPECT_EQ(n.nics[0].os_devices, std::vector<std::string>{"eth0"});
  EXPECT_EQ(n.nics[0].vendor, "Red Hat (virtio)");  // no PCIVendor info: from the id table
  EXPECT_EQ(n.nics[0].numa, 0);                     // host bridge below the Machine, one node
  EXPECT_EQ(n.nics[0].package, 0);
}

TEST(TopoXml, MissingFileNamesTheFile) {
  try {
    load_hwloc_xml(fixture("no-such-file.xml"));
    FAIL() << "no exception";
  } catch (const TopologyFileError& e) {
    EXPECT_EQ(e.path(), fixture("no-such-file.xml"));
    EXPECT_NE(std::string(e.what()).find("no-such-file.xml"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("No such file"), std::string::npos) << e.what();
  }
  EXPECT_THROW(load_hwloc_xml(TENSORHUB_TOPO_DATA_DIR), TopologyFileError);  // a directory
}

TEST(TopoXml, CorruptFileIsATypedUserError) {
  const std::string path = testing::TempDir() + "/corrupt-topo.xml";
  {
    std::ofstream f(path);
    f << "<?xml version=\"1.0\"?>\n<topology version=\"2.0\">\n  <object type=\"Machine\"";  // cut short
  }
  try {
    load_hwloc_xml(path);
    FAIL() << "no exception";
  } catch (const UserError& e) {  // TopologyFileError is a UserError: exit code 2 in the CLI
    EXPECT_NE(dynamic_cast<const TopologyFileError*>(&e), nullptr);
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("not a valid hwloc XML"), std::string::npos) << e.what();
  }
  {
    std::ofstream f(path);
    f << "{\"not\": \"xml\"}\n";
  }
  EXPECT_THROW(load_hwloc_xml(path), TopologyFileError);
  std::remove(path.c_str());
}

// hwloc 3's XML (format "3.0") is refused by hwloc 2: the error says so instead of "not valid".
TEST(TopoXml, NewerXmlFormatIsNamed) {
  try {
    load_hwloc_xml(fixture("hwloc3-format.xml"));
    FAIL() << "no exception";
  } catch (const TopologyFileError& e) {
    EXPECT_NE(std::string(e.what()).find("hwloc XML format 3.0 is newer than this hwloc"), std::string::npos)
        << e.what();
  }
}

TEST(TopoLive, DiscoversThisMachine) {
  const NodeTopology n = discover_local();
  EXPECT_EQ(n.source, "live");
  EXPECT_FALSE(n.hostname.empty());
  EXPECT_GE(n.packages, 1u);
  EXPECT_GE(n.cores, 1u);
  EXPECT_GE(n.pus, n.cores);
  EXPECT_EQ(n.gpu_nic.size(), n.gpus.size());
}

TEST(TopoAffinity, NamesRoundTrip) {
  for (auto a : {Affinity::kSamePciSwitch, Affinity::kSameHostBridge, Affinity::kSameNuma, Affinity::kSamePackage,
                 Affinity::kCrossSocket}) {
    EXPECT_EQ(affinity_from_string(to_string(a)), a);
  }
  EXPECT_THROW(affinity_from_string("nearby"), UserError);
  EXPECT_LT(Affinity::kSamePciSwitch, Affinity::kCrossSocket);  // "best first" order
}

TEST(TopoAffinity, NearestNicsOnHandMadeNodes) {
  NodeTopology n;
  n.gpus.resize(2);
  n.nics.resize(3);
  n.gpu_nic = {{Affinity::kSameNuma, Affinity::kSameHostBridge, Affinity::kSameHostBridge},
               {Affinity::kCrossSocket, Affinity::kCrossSocket, Affinity::kSamePackage}};
  EXPECT_EQ(nearest_nics(n, 0), (std::vector<std::size_t>{1, 2}));  // ties: every best NIC
  EXPECT_EQ(nearest_nics(n, 1), std::vector<std::size_t>{2});
  EXPECT_THROW(nearest_nics(n, 2), UserError);
  NodeTopology no_nic;
  no_nic.gpus.resize(1);
  no_nic.gpu_nic.resize(1);
  EXPECT_TRUE(nearest_nics(no_nic, 0).empty());
  EXPECT_EQ(best_nic_affinity(no_nic, 0), std::nullopt);
}

}  // namespace
}  // namespace tensorhub::topo
