// Where a process runs, as labels (dc / rack / host / numa / gpu), and the distance class
// between two processes that the planner sorts sources by:
//   same process < same host < same rack < same datacenter < other datacenter.
// distance_between() and resolve_labels() are pure functions; local_labels() reads this
// process's environment and binding.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tensorhub::topo {

struct TopologyFile;

struct Labels {
  std::string dc;          // TENSORHUB_DC or the topology file; "" = unlabelled
  std::string rack;        // TENSORHUB_RACK or the topology file; "" = unlabelled
  std::string host;        // gethostname(); the key of the host in a topology file
  std::int32_t numa = -1;  // NUMA node holding all CPUs the process may run on, else -1
  std::int32_t gpu = -1;   // TENSORHUB_GPU (index into the node's GPUs), -1 if none
  std::string process;     // identity of the process ("pid@host", a transport endpoint); "" = unknown

  bool operator==(const Labels&) const = default;
};

// coord::Distance is this type (an alias): the planner sorts sources by it.
enum class Distance : std::uint8_t { kSameProcess = 0, kSameHost = 1, kSameRack = 2, kSameDc = 3, kOtherDc = 4 };

// "process", "host", "rack", "dc", "other-dc".
std::string_view to_string(Distance d);

// Compares dc, then rack, then host, then process. Empty dc or rack labels equal each other
// (an unlabelled job is one rack in one DC). Two processes are the same process only if both
// `process` identities are non-empty and equal; otherwise a shared host is kSameHost.
Distance distance_between(const Labels& a, const Labels& b);

// Everything resolve_labels() needs, gathered by the caller (tests pass literals).
struct LabelSources {
  std::string hostname;
  std::optional<std::string> env_dc;    // TENSORHUB_DC
  std::optional<std::string> env_rack;  // TENSORHUB_RACK
  std::optional<std::string> env_gpu;   // TENSORHUB_GPU
  const TopologyFile* file = nullptr;   // dc/rack of `hostname` if the file lists it
  std::int32_t numa = -1;
  std::string process;
};

// Precedence for dc and rack: environment (even when set to "") > topology file > "".
// Throws UserError for a TENSORHUB_GPU that is not a non-negative integer.
Labels resolve_labels(const LabelSources& sources);

// This process: gethostname(), TENSORHUB_DC / TENSORHUB_RACK / TENSORHUB_GPU, the topology
// file `file` (else the one TENSORHUB_TOPOLOGY names, if set), the NUMA node of the current CPU
// binding (hwloc), and "pid@host" as the process identity.
Labels local_labels(const TopologyFile* file = nullptr);

// The NUMA node (OS index) that holds every CPU of this process's binding (so 0 for an unbound
// process on a one-node machine), or -1 when they span several nodes or hwloc cannot tell.
std::int32_t bound_numa_node();

}  // namespace tensorhub::topo
