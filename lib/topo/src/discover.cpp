// hwloc objects -> NodeTopology: counts, GPUs, NICs, their locality and GPU<->NIC affinity.
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <unordered_set>

#include "hwloc_handle.hpp"
#include "tensorhub/core/error.hpp"
#include "tensorhub/topo/node.hpp"

namespace tensorhub::topo {
namespace {

using detail::Hwloc;

constexpr std::uint16_t kNvidia = 0x10de;
constexpr std::uint16_t kAmd = 0x1002;
constexpr std::uint16_t kAmazon = 0x1d0f;

std::uint32_t count(hwloc_topology_t t, hwloc_obj_type_t type) {
  const int n = hwloc_get_nbobjs_by_type(t, type);
  return n > 0 ? static_cast<std::uint32_t>(n) : 0;
}

std::string busid(const hwloc_obj_t pci) {
  const auto& a = pci->attr->pcidev;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%04x:%02x:%02x.%01x", static_cast<unsigned>(a.domain), a.bus, a.dev, a.func);
  return buf;
}

std::string info(hwloc_obj_t obj, const char* name) {
  const char* v = hwloc_obj_get_info_by_name(obj, name);
  return v ? v : "";
}

bool is_drm_node(const hwloc_obj_t osdev) {
  // The Linux backend names DRM nodes card<N>, renderD<N>, controlD<N>: any display adapter,
  // including a BMC's, has them, so they do not make a PCI device a GPU.
  const char* n = osdev->name ? osdev->name : "";
  return std::strncmp(n, "card", 4) == 0 || std::strncmp(n, "renderD", 7) == 0 || std::strncmp(n, "controlD", 8) == 0;
}

bool is_opencl(const hwloc_obj_t osdev) {
  const char* sub = osdev->subtype ? osdev->subtype : "";
  const char* n = osdev->name ? osdev->name : "";
  return std::strcmp(sub, "OpenCL") == 0 || std::strncmp(n, "opencl", 6) == 0;
}

struct Found {
  Device device;
  hwloc_obj_t obj;
};

// Locality of an I/O object: its first CPU-side ancestor, then the NUMA node and package that
// ancestor lies in (only if there is exactly one).
void locate(hwloc_topology_t t, hwloc_obj_t obj, Device& d) {
  const hwloc_obj_t anc = hwloc_get_non_io_ancestor_obj(t, obj);
  if (anc == nullptr) return;
  int numa = -1;
  int matches = 0;
  for (hwloc_obj_t n = nullptr; (n = hwloc_get_next_obj_by_type(t, HWLOC_OBJ_NUMANODE, n)) != nullptr;) {
    if (anc->nodeset && hwloc_bitmap_isset(anc->nodeset, n->os_index)) {
      numa = static_cast<int>(n->os_index);
      ++matches;
    }
  }
  d.numa = matches == 1 ? numa : -1;
  for (hwloc_obj_t p = nullptr; (p = hwloc_get_next_obj_by_type(t, HWLOC_OBJ_PACKAGE, p)) != nullptr;) {
    if (anc->cpuset && p->cpuset && hwloc_bitmap_isincluded(anc->cpuset, p->cpuset)) {
      d.package = static_cast<int>(p->os_index);
      break;
    }
  }
}

Affinity classify(hwloc_topology_t t, const Found& a, const Found& b) {
  std::unordered_set<hwloc_obj_t> up;
  for (hwloc_obj_t o = a.obj; o; o = o->parent) up.insert(o);
  hwloc_obj_t lca = b.obj;
  while (lca && !up.count(lca)) lca = lca->parent;
  if (lca && lca->type == HWLOC_OBJ_BRIDGE) {
    return lca->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_PCI ? Affinity::kSamePciSwitch
                                                                   : Affinity::kSameHostBridge;
  }
  if (lca && lca->type == HWLOC_OBJ_PCI_DEVICE) return Affinity::kSamePciSwitch;  // one device
  // Different root complexes: the CPU side decides.
  const Device& da = a.device;
  const Device& db = b.device;
  if (da.numa >= 0 && db.numa >= 0) {
    if (da.numa == db.numa) return Affinity::kSameNuma;
  } else {
    // Locality known only as a set of nodes (device attached above the NUMA level).
    const hwloc_obj_t x = hwloc_get_non_io_ancestor_obj(t, a.obj);
    const hwloc_obj_t y = hwloc_get_non_io_ancestor_obj(t, b.obj);
    if (x && y && x->nodeset && y->nodeset && hwloc_bitmap_intersects(x->nodeset, y->nodeset))
      return Affinity::kSameNuma;
  }
  if (da.package >= 0 && da.package == db.package) return Affinity::kSamePackage;
  return Affinity::kCrossSocket;
}

Device make_device(hwloc_obj_t pci, const std::vector<hwloc_obj_t>& osdevs) {
  const auto& a = pci->attr->pcidev;
  Device d;
  d.pci_busid = busid(pci);
  d.vendor_id = a.vendor_id;
  d.device_id = a.device_id;
  d.pci_class = a.class_id;
  d.vendor = info(pci, "PCIVendor");
  if (d.vendor.empty()) d.vendor = std::string(known_pci_vendor(a.vendor_id));
  d.model = info(pci, "PCIDevice");
  for (hwloc_obj_t o : osdevs) {
    if (o->name) d.os_devices.emplace_back(o->name);
    if (d.model.empty()) d.model = info(o, "GPUModel");
  }
  return d;
}

NodeTopology summarize(hwloc_topology_t t, std::string source) {
  NodeTopology node;
  node.source = std::move(source);
  node.hostname = info(hwloc_get_root_obj(t), "HostName");
  node.packages = count(t, HWLOC_OBJ_PACKAGE);
  node.numa_nodes = count(t, HWLOC_OBJ_NUMANODE);
  node.cores = count(t, HWLOC_OBJ_CORE);
  node.pus = count(t, HWLOC_OBJ_PU);
  for (hwloc_obj_t n = nullptr; (n = hwloc_get_next_obj_by_type(t, HWLOC_OBJ_NUMANODE, n)) != nullptr;) {
    node.memory_bytes += n->attr->numanode.local_memory;
  }

  std::vector<Found> gpus;
  std::vector<Found> nics;
  for (hwloc_obj_t pci = nullptr; (pci = hwloc_get_next_pcidev(t, pci)) != nullptr;) {
    std::vector<hwloc_obj_t> osdevs;
    bool gpu_os = false;
    bool opencl_os = false;  // an OpenCL device: a GPU only on a GPU vendor's or a 3D controller
    bool net_os = false;
    for (hwloc_obj_t c = pci->io_first_child; c; c = c->next_sibling) {
      if (c->type != HWLOC_OBJ_OS_DEVICE) continue;
      osdevs.push_back(c);
      const auto type = c->attr->osdev.type;
      if (type == HWLOC_OBJ_OSDEV_COPROC && is_opencl(c))
        opencl_os = true;
      else if (type == HWLOC_OBJ_OSDEV_COPROC || (type == HWLOC_OBJ_OSDEV_GPU && !is_drm_node(c)))
        gpu_os = true;
      if (type == HWLOC_OBJ_OSDEV_NETWORK || type == HWLOC_OBJ_OSDEV_OPENFABRICS) net_os = true;
    }
    const auto& a = pci->attr->pcidev;
    const bool gpu_vendor = a.vendor_id == kNvidia || a.vendor_id == kAmd;
    const bool gpu_class = a.class_id == 0x0302 || (gpu_vendor && (a.class_id == 0x0300 || a.class_id == 0x0380));
    const bool gpu = gpu_os || gpu_class || (opencl_os && gpu_vendor);
    const bool nic = net_os || (a.class_id >> 8) == 0x02;
    const bool accel = !gpu && !nic && ((a.class_id >> 8) == 0x12 || (a.vendor_id == kAmazon && a.class_id == 0x0880));
    if (!gpu && !nic && !accel) continue;
    Device d = make_device(pci, osdevs);
    locate(t, pci, d);
    if (gpu) gpus.push_back({d, pci});
    if (nic) nics.push_back({d, pci});
    if (accel) node.accelerators.push_back(d);
  }
  for (const auto& g : gpus) {
    node.gpus.push_back(g.device);
    auto& row = node.gpu_nic.emplace_back();
    for (const auto& n : nics) row.push_back(classify(t, g, n));
  }
  for (const auto& n : nics) node.nics.push_back(n.device);
  return node;
}

}  // namespace

NodeTopology discover_local() {
  const Hwloc h = Hwloc::live(/*io=*/true);
  NodeTopology node = summarize(h.get(), "live");
  if (node.hostname.empty()) {
    char host[256] = {};
    if (gethostname(host, sizeof host - 1) == 0) node.hostname = host;
  }
  return node;
}

NodeTopology load_hwloc_xml(const std::string& path) {
  const Hwloc h = Hwloc::from_xml(path);
  NodeTopology node = summarize(h.get(), path);
  if (node.hostname.empty()) {
    // No HostName in the export: name the machine after the file, never after this host.
    const auto slash = path.find_last_of('/');
    auto stem = slash == std::string::npos ? path : path.substr(slash + 1);
    if (const auto dot = stem.rfind(".xml"); dot != std::string::npos && dot > 0) stem.resize(dot);
    node.hostname = stem;
  }
  return node;
}

}  // namespace tensorhub::topo
