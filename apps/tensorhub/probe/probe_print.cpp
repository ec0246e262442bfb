// Tables of `tensorhub probe`: ranks and labels, each host's hardware (GPUs, NICs, GPU<->NIC
// affinity), and the MPI_Get matrix (bandwidth at the largest size, latency at the smallest).
#include <cmath>
#include <cstdio>
#include <string>

#include "common/report.hpp"
#include "probe/probe_common.hpp"
#include "tensorhub/core/units.hpp"

namespace tensorhub::cli {
namespace {

std::string or_dash(const std::string& s) { return s.empty() ? "-" : s; }
std::string or_dash(std::int32_t v) { return v < 0 ? "-" : std::to_string(v); }

// nvidia-smi topo -m style codes, with our five classes.
const char* code(topo::Affinity a) {
  switch (a) {
    case topo::Affinity::kSamePciSwitch:
      return "SW";
    case topo::Affinity::kSameHostBridge:
      return "PHB";
    case topo::Affinity::kSameNuma:
      return "NODE";
    case topo::Affinity::kSamePackage:
      return "PKG";
    case topo::Affinity::kCrossSocket:
      return "SYS";
  }
  return "?";
}

// Past this many NICs the GPU x NIC matrix is printed as ranges per class instead.
constexpr std::size_t kMatrixNics = 16;

// "nic0-3,nic8,nic10-11" for sorted indices; "-" when empty.
std::string ranges(const std::vector<std::size_t>& xs, const char* prefix) {
  std::string out;
  for (std::size_t i = 0; i < xs.size();) {
    std::size_t j = i;
    while (j + 1 < xs.size() && xs[j + 1] == xs[j] + 1) ++j;
    out += (out.empty() ? "" : ",") + std::string(prefix) + std::to_string(xs[i]);
    if (j > i) out += "-" + std::to_string(xs[j]);
    i = j + 1;
  }
  return out.empty() ? "-" : out;
}

std::string hex4(std::uint16_t v) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "%04x", static_cast<unsigned>(v));
  return buf;
}

std::string join(const std::vector<std::string>& xs) {
  std::string out;
  for (const auto& x : xs) out += (out.empty() ? "" : ",") + x;
  return or_dash(out);
}

void print_node(std::FILE* out, const topo::NodeTopology& n) {
  std::fprintf(out, "  hardware: %s (%s)\n", or_dash(n.hostname).c_str(),
               n.source == "live" ? "live hwloc discovery" : ("hwloc XML " + n.source).c_str());
  std::size_t rdma = 0;
  for (const auto& d : n.nics) rdma += topo::rdma_capable(d) ? 1 : 0;
  std::fprintf(out, "  packages %u, NUMA nodes %u, cores %u, PUs %u, memory %s; GPUs %zu, NICs %zu (%zu RDMA)%s\n",
               n.packages, n.numa_nodes, n.cores, n.pus, format_bytes(n.memory_bytes).c_str(), n.gpus.size(),
               n.nics.size(), rdma,
               n.accelerators.empty() ? "" : (", accelerators " + std::to_string(n.accelerators.size())).c_str());
  if (!n.accelerators.empty()) {
    std::fprintf(out, "\n");
    Table t({"accelerator", "pci bus id", "id", "vendor", "model", "os devices", "numa", "package"});
    for (std::size_t i = 0; i < n.accelerators.size(); ++i) {
      const auto& d = n.accelerators[i];
      t.add({"acc" + std::to_string(i), or_dash(d.pci_busid), hex4(d.vendor_id) + ":" + hex4(d.device_id),
             or_dash(d.vendor), or_dash(d.model), join(d.os_devices), or_dash(d.numa), or_dash(d.package)});
    }
    t.print(out);
    if (n.gpus.empty())
      std::fprintf(out, "  (no GPU: the accelerators above are not GPUs; TensorHub pulls into host memory)\n");
  }
  if (!n.gpus.empty()) {
    std::fprintf(out, "\n");
    Table t({"gpu", "pci bus id", "id", "vendor", "model", "os devices", "numa", "package", "nearest nic", "affinity"});
    for (std::size_t g = 0; g < n.gpus.size(); ++g) {
      const auto& d = n.gpus[g];
      const auto best = topo::best_nic_affinity(n, g);
      t.add({"gpu" + std::to_string(g), or_dash(d.pci_busid), hex4(d.vendor_id) + ":" + hex4(d.device_id),
             or_dash(d.vendor), or_dash(d.model), join(d.os_devices), or_dash(d.numa), or_dash(d.package),
             ranges(topo::nearest_nics(n, g), "nic"), best ? std::string(topo::to_string(*best)) : "-"});
    }
    t.print(out);
  }
  if (!n.nics.empty()) {
    std::fprintf(out, "\n");
    Table t({"nic", "pci bus id", "id", "vendor", "model", "os devices", "rdma", "numa", "package"});
    for (std::size_t i = 0; i < n.nics.size(); ++i) {
      const auto& d = n.nics[i];
      t.add({"nic" + std::to_string(i), or_dash(d.pci_busid), hex4(d.vendor_id) + ":" + hex4(d.device_id),
             or_dash(d.vendor), or_dash(d.model), join(d.os_devices), topo::rdma_capable(d) ? "yes" : "no",
             or_dash(d.numa), or_dash(d.package)});
    }
    t.print(out);
  }
  if (!n.gpus.empty() && !n.nics.empty()) {
    std::fprintf(out,
                 "\n  GPU<->NIC affinity: SW same PCIe switch, PHB same host bridge, NODE same NUMA node,\n"
                 "  PKG same package, SYS across sockets\n");
    if (n.nics.size() > kMatrixNics) {
      // Too many columns for a matrix: per GPU, the NICs of each class as ranges (nic0-7).
      Table t({"", "numa", "SW", "PHB", "NODE", "PKG", "SYS"});
      for (std::size_t g = 0; g < n.gpus.size(); ++g) {
        std::vector<std::string> row{"gpu" + std::to_string(g), or_dash(n.gpus[g].numa)};
        for (int a = 0; a <= static_cast<int>(topo::Affinity::kCrossSocket); ++a) {
          std::vector<std::size_t> of;
          for (std::size_t i = 0; i < n.gpu_nic[g].size(); ++i) {
            if (static_cast<int>(n.gpu_nic[g][i]) == a) of.push_back(i);
          }
          row.push_back(ranges(of, "nic"));
        }
        t.add(row);
      }
      t.print(out);
      return;
    }
    std::vector<std::string> head{""};
    for (std::size_t i = 0; i < n.nics.size(); ++i) head.push_back("nic" + std::to_string(i));
    head.push_back("numa");
    Table t(head);
    for (std::size_t g = 0; g < n.gpus.size(); ++g) {
      std::vector<std::string> row{"gpu" + std::to_string(g)};
      for (auto a : n.gpu_nic[g]) row.emplace_back(code(a));
      row.push_back(or_dash(n.gpus[g].numa));
      t.add(row);
    }
    t.print(out);
  }
}

std::string cell(double v, int decimals) { return std::isfinite(v) ? fmt(v, decimals) : "-"; }

void print_matrix(std::FILE* out, const topo::GetMatrix& m) {
  if (m.sizes.empty() || m.endpoints.size() < 2) return;
  std::vector<std::string> head{"reader \\ holder"};
  for (auto r : m.endpoints) head.push_back("rank " + std::to_string(r));
  auto table = [&](const auto& cube, std::size_t s, int decimals) {
    Table t(head);
    for (std::size_t i = 0; i < m.endpoints.size(); ++i) {
      std::vector<std::string> row{"rank " + std::to_string(m.endpoints[i])};
      for (std::size_t j = 0; j < m.endpoints.size(); ++j) row.push_back(cell(cube[i][j][s], decimals));
      t.add(row);
    }
    t.print(out);
  };
  const std::size_t big = m.sizes.size() - 1;
  std::fprintf(out, "\nMPI_Get bandwidth, GB/s, %s messages, %u in flight (%s scope; %u iterations after %u warm-up)\n",
               format_bytes(m.sizes[big]).c_str(), effective_window(m.sizes[big], m.window), m.scope.c_str(),
               m.iterations, m.warmup);
  table(m.bandwidth_gbps, big, 2);
  std::fprintf(out, "\nMPI_Get latency, microseconds, %s messages (one MPI_Rget + MPI_Wait)\n",
               format_bytes(m.sizes[0]).c_str());
  table(m.latency_us, 0, 2);
}

}  // namespace

void print_topology_file(std::FILE* out, const topo::TopologyFile& f) {
  if (!f.ranks.empty()) {
    Table t({"rank", "host", "dc", "rack", "numa", "gpu", "process"});
    for (const auto& r : f.ranks) {
      const auto& l = r.labels;
      t.add({std::to_string(r.rank), or_dash(l.host), or_dash(l.dc), or_dash(l.rack), or_dash(l.numa), or_dash(l.gpu),
             or_dash(l.process)});
    }
    t.print(out);
  }
  for (const auto& h : f.hosts) {
    std::string ranks;
    for (auto r : h.ranks) ranks += (ranks.empty() ? "" : ",") + std::to_string(r);
    std::fprintf(out, "\nhost %s  dc=%s rack=%s  ranks %s\n", h.host.c_str(), or_dash(h.dc).c_str(),
                 or_dash(h.rack).c_str(), or_dash(ranks).c_str());
    if (h.topology) print_node(out, *h.topology);
  }
  if (f.matrix) print_matrix(out, *f.matrix);
}

}  // namespace tensorhub::cli
