// Pure helpers over NodeTopology (no hwloc).
#include "tensorhub/topo/node.hpp"

#include <algorithm>
#include <array>
#include <utility>

#include "tensorhub/core/error.hpp"

namespace tensorhub::topo {
namespace {

constexpr std::array<std::pair<Affinity, std::string_view>, 5> kAffinityNames{{
    {Affinity::kSamePciSwitch, "pci-switch"},
    {Affinity::kSameHostBridge, "host-bridge"},
    {Affinity::kSameNuma, "numa"},
    {Affinity::kSamePackage, "package"},
    {Affinity::kCrossSocket, "cross-socket"},
}};

}  // namespace

std::string_view to_string(Affinity a) {
  for (const auto& [value, name] : kAffinityNames) {
    if (value == a) return name;
  }
  return "unknown";
}

Affinity affinity_from_string(std::string_view name) {
  for (const auto& [value, n] : kAffinityNames) {
    if (n == name) return value;
  }
  throw UserError("unknown affinity class '" + std::string(name) +
                  "' (expected pci-switch, host-bridge, numa, package or cross-socket)");
}

bool rdma_capable(const Device& nic) {
  for (const auto& o : nic.os_devices) {
    // OpenFabrics (verbs) devices: mlx5_0, mlx4_0, efa_0, hfi1_0, irdma0, bnxt_re0, qedr0, rxe0.
    for (const char* p : {"mlx", "efa", "hfi", "irdma", "bnxt_re", "qedr", "ib"}) {
      if (o.rfind(p, 0) == 0) return true;
    }
  }
  if (nic.vendor_id == 0x15b3) return true;                                        // Mellanox / NVIDIA networking
  if (nic.vendor_id == 0x1d0f && (nic.device_id & 0xfff0) == 0xefa0) return true;  // AWS EFA
  return false;
}

namespace {

// The NICs nearest_nics chooses from: the RDMA-capable ones if any, else all.
std::vector<std::size_t> candidate_nics(const NodeTopology& node) {
  std::vector<std::size_t> rdma;
  std::vector<std::size_t> all;
  for (std::size_t n = 0; n < node.nics.size(); ++n) {
    all.push_back(n);
    if (rdma_capable(node.nics[n])) rdma.push_back(n);
  }
  return rdma.empty() ? all : rdma;
}

}  // namespace

std::optional<Affinity> best_nic_affinity(const NodeTopology& node, std::size_t gpu) {
  if (gpu >= node.gpus.size() || gpu >= node.gpu_nic.size()) {
    throw UserError("GPU index " + std::to_string(gpu) + " out of range (" + std::to_string(node.gpus.size()) +
                    " GPUs on " + node.hostname + ")");
  }
  const auto& row = node.gpu_nic[gpu];
  std::optional<Affinity> best;
  for (const auto n : candidate_nics(node)) {
    if (n < row.size() && (!best || row[n] < *best)) best = row[n];
  }
  return best;
}

std::vector<std::size_t> nearest_nics(const NodeTopology& node, std::size_t gpu) {
  std::vector<std::size_t> out;
  const auto best = best_nic_affinity(node, gpu);
  if (!best) return out;
  const auto& row = node.gpu_nic[gpu];
  for (const auto n : candidate_nics(node)) {
    if (n < row.size() && row[n] == *best) out.push_back(n);
  }
  return out;
}

std::string_view known_pci_vendor(std::uint16_t vendor_id) {
  switch (vendor_id) {
    case 0x10de:
      return "NVIDIA";
    case 0x1002:  // AMD/ATI: GPUs
    case 0x1022:  // AMD: CPUs, chipsets
      return "AMD";
    case 0x8086:
      return "Intel";
    case 0x15b3:
      return "Mellanox";
    case 0x14e4:
      return "Broadcom";
    case 0x1077:
      return "QLogic";
    case 0x1924:
      return "Solarflare";
    case 0x1d0f:
      return "Amazon";
    case 0x1af4:
      return "Red Hat (virtio)";
    case 0x1da3:
      return "Habana";
    case 0x1a03:
      return "ASPEED";
    default:
      return "";
  }
}

}  // namespace tensorhub::topo
