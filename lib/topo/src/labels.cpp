#include "tensorhub/topo/labels.hpp"

#include <unistd.h>

#include <charconv>
#include <optional>

#include "hwloc_handle.hpp"
#include "tensorhub/core/env.hpp"
#include "tensorhub/core/error.hpp"
#include "tensorhub/topo/topology_file.hpp"

namespace tensorhub::topo {

std::string_view to_string(Distance d) {
  switch (d) {
    case Distance::kSameProcess:
      return "process";
    case Distance::kSameHost:
      return "host";
    case Distance::kSameRack:
      return "rack";
    case Distance::kSameDc:
      return "dc";
    case Distance::kOtherDc:
      return "other-dc";
  }
  return "unknown";
}

Distance distance_between(const Labels& a, const Labels& b) {
  if (a.dc != b.dc) return Distance::kOtherDc;
  if (a.rack != b.rack) return Distance::kSameDc;
  if (a.host != b.host) return Distance::kSameRack;
  if (!a.process.empty() && a.process == b.process) return Distance::kSameProcess;
  return Distance::kSameHost;
}

Labels resolve_labels(const LabelSources& s) {
  Labels l;
  l.host = s.hostname;
  l.numa = s.numa;
  l.process = s.process;
  if (s.file != nullptr) {
    if (const HostEntry* h = s.file->find_host(s.hostname)) {
      l.dc = h->dc;
      l.rack = h->rack;
    }
  }
  if (s.env_dc) l.dc = *s.env_dc;
  if (s.env_rack) l.rack = *s.env_rack;
  if (s.env_gpu && !s.env_gpu->empty()) {
    const std::string& g = *s.env_gpu;
    int value = -1;
    const auto [end, ec] = std::from_chars(g.data(), g.data() + g.size(), value);
    if (ec != std::errc() || end != g.data() + g.size() || value < 0) {
      throw UserError("TENSORHUB_GPU='" + g + "' is not a GPU index (0, 1, ...)");
    }
    l.gpu = value;
  }
  return l;
}

std::int32_t bound_numa_node() {
  try {
    const auto h = detail::Hwloc::live(/*io=*/false);
    detail::Bitmap cpus;
    detail::Bitmap nodes;
    if (hwloc_get_cpubind(h.get(), cpus.get(), HWLOC_CPUBIND_PROCESS) != 0) return -1;
    hwloc_cpuset_to_nodeset(h.get(), cpus.get(), nodes.get());
    if (hwloc_bitmap_weight(nodes.get()) != 1) return -1;
    return static_cast<std::int32_t>(hwloc_bitmap_first(nodes.get()));
  } catch (const Error&) {
    return -1;  // a label, not a requirement
  }
}

Labels local_labels(const TopologyFile* file) {
  LabelSources s;
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) == 0) s.hostname = host;
  s.env_dc = env::raw("TENSORHUB_DC");  // set but empty still overrides the file
  s.env_rack = env::raw("TENSORHUB_RACK");
  s.env_gpu = env::text("TENSORHUB_GPU");  // checked by resolve_labels
  std::optional<TopologyFile> from_env;
  if (file == nullptr) {
    if (auto path = env::text("TENSORHUB_TOPOLOGY")) {
      from_env = load_topology_file(*path);
      file = &*from_env;
    }
  }
  s.file = file;
  s.numa = bound_numa_node();
  s.process = std::to_string(getpid()) + "@" + s.hostname;
  return resolve_labels(s);
}

}  // namespace tensorhub::topo
