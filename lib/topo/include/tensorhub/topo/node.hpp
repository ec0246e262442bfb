// One node's hardware as TensorHub's planner sees it: CPU counts, GPUs, NICs and how close each
// GPU is to each NIC on the PCI tree. Discovered with hwloc (live, or from an hwloc XML export)
// and then plain data: copyable, comparable, serialisable (topology_file.hpp), no hwloc types.
//
// What counts as a device (hwloc 2.x objects):
//   GPU  a PCI device with an OS device of type COPROC (CUDA, OpenCL, LevelZero...) or of type
//        GPU other than a DRM node (NVML, RSMI; "card0"/"renderD128" alone say nothing), or with
//        PCI class 0x0302 (3D controller, any vendor), or with class 0x0300/0x0380 from NVIDIA or
//        AMD. A server's BMC display (ASPEED, Matrox, a hypervisor's VGA) is therefore not a GPU.
//        An OpenCL device alone does not make a display adapter of another vendor a GPU (a VM's
//        VGA with a CPU OpenCL runtime is not one).
//   NIC  a PCI device with an OS device of type NETWORK or OPENFABRICS, or with PCI class 0x02xx.
//        RDMA-capable NICs (an OPENFABRICS OS device: mlx5_N, efa_N, ...; Mellanox/NVIDIA
//        networking; AWS EFA 1d0f:efaN) rank above plain Ethernet (ENA, management ports).
//   accelerator  a non-GPU compute device: PCI class 0x12xx (processing accelerator), or an
//        Amazon (1d0f) class 0x0880 device (Trainium / Inferentia, no OS device).
// One PCI function is one device, however many OS devices hang below it (mlx5_0 + ibp4s0).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tensorhub::topo {

// How close a GPU is to a NIC, best first. The PCI classes hold when both sit below the same
// PCI-PCI bridge (a PCIe switch or root port: peer-to-peer traffic never reaches the host
// bridge) or the same host bridge (root complex); otherwise their CPU-side locality decides.
enum class Affinity : std::uint8_t {
  kSamePciSwitch = 0,
  kSameHostBridge = 1,
  kSameNuma = 2,
  kSamePackage = 3,
  kCrossSocket = 4,
};

// "pci-switch", "host-bridge", "numa", "package", "cross-socket".
std::string_view to_string(Affinity a);
// Inverse of to_string; throws UserError on an unknown name.
Affinity affinity_from_string(std::string_view name);

// A GPU or a NIC: one PCI function.
struct Device {
  std::string pci_busid;                // "0000:17:00.0"; empty for a device hwloc saw without PCI
  std::uint16_t vendor_id = 0;          // 0x10de
  std::uint16_t device_id = 0;          // 0x2330
  std::uint16_t pci_class = 0;          // 0x0302
  std::string vendor;                   // "NVIDIA Corporation" (hwloc's PCIVendor, else a known id)
  std::string model;                    // "GH100 [H100 SXM5 80GB]" (PCIDevice or GPUModel), may be empty
  std::vector<std::string> os_devices;  // "cuda0", "mlx5_0", "ibp4s0", "eth0"; may be empty
  std::int32_t numa = -1;               // OS index of the nearest NUMA node, -1 if unknown
  std::int32_t package = -1;            // OS index of the package, -1 if unknown

  bool operator==(const Device&) const = default;
};

struct NodeTopology {
  std::string hostname;  // hwloc's HostName info, else gethostname() for a live discovery
  std::string source;    // "live" or the XML file's path
  std::uint32_t packages = 0;
  std::uint32_t numa_nodes = 0;
  std::uint32_t cores = 0;
  std::uint32_t pus = 0;
  std::uint64_t memory_bytes = 0;    // sum of the NUMA nodes' local memory
  std::vector<Device> gpus;          // in hwloc's PCI device order; index = position
  std::vector<Device> nics;          // in hwloc's PCI device order; index = position
  std::vector<Device> accelerators;  // non-GPU accelerators (Trainium, Inferentia, Gaudi...)
  // gpu_nic[g][n]: affinity of GPU g to NIC n (gpus.size() rows of nics.size()).
  std::vector<std::vector<Affinity>> gpu_nic;

  bool operator==(const NodeTopology&) const = default;
};

// Discovers this machine (with PCI and OS devices). Throws tensorhub::Error if hwloc fails.
NodeTopology discover_local();

// Loads an hwloc XML export (`lstopo --of xml`, hwloc 1.x or 2.x format). Throws
// TopologyFileError naming the file if it cannot be read or is not a valid hwloc XML topology.
NodeTopology load_hwloc_xml(const std::string& path);

// Whether a NIC can do RDMA (see the definitions above).
bool rdma_capable(const Device& nic);

// GPU `gpu`'s nearest NICs: among the RDMA-capable NICs if the node has any (else among all),
// every NIC of the best affinity class, in index order (empty if the node has no NIC). Affinity
// classes past the host bridge are NUMA distances (same node, same package, across sockets).
// Throws UserError if `gpu` is out of range.
std::vector<std::size_t> nearest_nics(const NodeTopology& node, std::size_t gpu);

// The best affinity class of GPU `gpu` to the NICs nearest_nics chooses from; nullopt if none.
std::optional<Affinity> best_nic_affinity(const NodeTopology& node, std::size_t gpu);

// "NVIDIA", "AMD", "Intel", "Mellanox"... for a PCI vendor id, or "" if unknown.
std::string_view known_pci_vendor(std::uint16_t vendor_id);

}  // namespace tensorhub::topo
