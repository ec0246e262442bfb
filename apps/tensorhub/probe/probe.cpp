// tensorhub probe: this node's topology (packages, NUMA nodes, cores, GPUs, NICs, GPU<->NIC
// PCI affinity) from hwloc; under an MPI launcher with 2+ ranks, also every rank's labels and
// the pairwise passive-target MPI_Get bandwidth/latency matrix (probe_mpi.cpp).
//
// MPI or not: launched by mpirun/srun (the launcher's environment says so), the probe is an
// MPI job; started by hand it never calls MPI_Init (no singleton, so none of Open MPI's
// singleton window caveats apply), like `tensorhub serve`.
#include <mpi.h>
#include <sys/types.h>
#include <unistd.h>

#include <boost/program_options.hpp>
#include <cstdlib>
#include <ctime>
#include <iostream>

#include "common/command_table.hpp"
#include "common/commands.hpp"
#include "common/options.hpp"
#include "common/report.hpp"
#include "probe/probe_common.hpp"
#include "tensorhub/core/env.hpp"
#include "tensorhub/core/error.hpp"
#include "tensorhub/core/units.hpp"
#include "tensorhub/transport/cma_check.hpp"
#include "tensorhub/transport/device_ipc_check.hpp"
#include "tensorhub/transport/device_paths_check.hpp"
#if defined(OPEN_MPI) && OPEN_MPI && __has_include(<mpi-ext.h>)
#include <mpi-ext.h>
#endif

namespace po = boost::program_options;

namespace tensorhub::cli {
namespace {

// Open MPI's compile-time and run-time answer (mpi-ext.h); other MPIs: unknown. mpi_rma reads and
// exposes host memory only in this build either way.
std::string cuda_aware_mpi() {
  std::string s;
#if defined(MPIX_CUDA_AWARE_SUPPORT) && MPIX_CUDA_AWARE_SUPPORT
  s = MPIX_Query_cuda_support() == 1 ? "yes (Open MPI reports CUDA support)"
                                     : "no (Open MPI built with CUDA, not enabled now)";
#elif defined(MPIX_CUDA_AWARE_SUPPORT)
  s = "no (this Open MPI is built without CUDA)";
#else
  s = "unknown (this MPI does not say)";
#endif
  return s + "; mpi_rma windows over device memory are not built: device memory goes over device_ipc, ucx or staged";
}

// Environment variables that MPI launchers set for their processes (Open MPI's mpirun, PMIx
// launchers such as srun --mpi=pmix and prterun, MPICH's hydra and PMI-2 launchers).
bool launched_by_mpi() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE"}) {
    if (env::text(v)) return true;
  }
  return false;
}

topo::TopologyFile local_file(const ProbeConfig& c) {
  topo::TopologyFile f;
  f.created = utc_now();
  f.command = c.command;
  topo::RankEntry r;
  r.rank = 0;
  r.labels = topo::local_labels();
  f.ranks.push_back(r);
  topo::HostEntry h;
  h.host = r.labels.host;
  h.dc = r.labels.dc;
  h.rack = r.labels.rack;
  h.leader = 0;
  h.ranks = {0};
  h.topology = probe_node(c);
  if (!c.xml.empty()) {
    // The file describes another machine: label the output with it, not with this host.
    h.host = h.topology->hostname;
    h.dc.clear();
    h.rack.clear();
    f.ranks.front().labels = topo::Labels{};  // this process's numa/gpu/pid say nothing about it
    f.ranks.front().labels.host = h.host;
  }
  f.hosts.push_back(std::move(h));
  return f;
}

}  // namespace

void probe_emit(const ProbeConfig& c, const topo::TopologyFile& f) {
  if (c.json) {
    const nlohmann::json j = f;
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    print_topology_file(stdout, f);
  }
  if (!c.out.empty()) {
    topo::save_topology_file(c.out, f);
    if (!c.json) std::printf("\nwrote %s\n", c.out.c_str());
  }
}

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

topo::NodeTopology probe_node(const ProbeConfig& c) {
  return c.xml.empty() ? topo::discover_local() : topo::load_hwloc_xml(c.xml);
}

std::vector<std::uint64_t> probe_sizes(const ProbeConfig& c) {
  const std::uint64_t lo = parse_bytes(c.min_bytes);
  const std::uint64_t hi = parse_bytes(c.max_bytes);
  if (lo == 0 || lo > hi) throw UserError("need 0 < --min-bytes <= --max-bytes");
  if (hi > (1ull << 30)) throw UserError("--max-bytes is at most 1GiB (one MPI_Rget)");
  if (c.factor < 2) throw UserError("--factor must be >= 2");
  std::vector<std::uint64_t> sizes;
  for (std::uint64_t s = lo; s <= hi; s *= c.factor) sizes.push_back(s);
  if (sizes.back() != hi) sizes.push_back(hi);
  return sizes;
}

int cmd_probe(const Args& args) {
  ProbeConfig c;
  po::options_description desc(
      help_head("probe",
                "Topology from hwloc: packages, NUMA nodes, cores, GPUs and NICs with their PCI bus ids, and\n"
                "GPU<->NIC<->NUMA affinity. Started by an MPI launcher with 2+ ranks it also records every rank's\n"
                "labels (host, TENSORHUB_DC/RACK/GPU, NUMA binding) and measures the pairwise passive-target\n"
                "MPI_Get bandwidth and latency between ranks (or between hosts: --scope host), one pair at a\n"
                "time. --out writes it all as a topology file (share/doc/topology.md).\n"));
  desc.add_options()("xml", po::value(&c.xml),
                     "use this hwloc XML export (lstopo --of xml) instead of discovering the machine")(
      "load", po::value(&c.load), "print a topology file written by --out (no discovery, no MPI)")(
      "json", po::bool_switch(&c.json), "print the topology file as JSON instead of tables")(
      "out", po::value(&c.out), "write the topology file here")(
      "scope", po::value(&c.scope)->default_value(c.scope),
      "MPI_Get matrix between every rank (rank) or one leader rank per host (host)")(
      "no-matrix", "skip the MPI_Get measurements")("min-bytes,b", po::value(&c.min_bytes)->default_value(c.min_bytes),
                                                    "smallest message (latency table)")(
      "max-bytes,e", po::value(&c.max_bytes)->default_value(c.max_bytes), "largest message (bandwidth table)")(
      "factor,f", po::value(&c.factor)->default_value(c.factor), "size multiplier between steps")(
      "iters,n", po::value(&c.iters)->default_value(c.iters), "timed iterations per size and pair")(
      "warmup,w", po::value(&c.warmup)->default_value(c.warmup), "untimed iterations first")(
      "window", po::value(&c.window)->default_value(c.window),
      "MPI_Rgets in flight per bandwidth iteration (fewer for large messages: at most 64MiB in flight)");
  po::variables_map vm;
  if (!parse_options("probe", desc, args, vm)) return 0;
  c.matrix = vm.count("no-matrix") == 0;
  c.command = "tensorhub probe";
  for (const auto& a : args) c.command += " " + a;
  if (c.scope != "rank" && c.scope != "host") throw UserError("--scope must be rank or host, not '" + c.scope + "'");
  if (c.iters == 0) throw UserError("--iters must be >= 1");
  if (c.window == 0) throw UserError("--window must be >= 1");
  if (!c.load.empty() && !c.xml.empty()) throw UserError("--load and --xml exclude each other");
  (void)probe_sizes(c);  // bad sizes fail here, before MPI starts

  if (!c.load.empty()) {
    const topo::TopologyFile f = topo::load_topology_file(c.load);
    probe_emit(c, f);
    return 0;
  }
  // Bad input fails here, once, before MPI starts (not once per rank followed by MPI_Abort).
  if (!c.xml.empty()) (void)topo::load_hwloc_xml(c.xml);
  if (launched_by_mpi()) return run_mpi_command("probe", [&](int rank) { return run_probe_mpi(c, rank); });
  probe_emit(c, local_file(c));
  if (!c.json) {
    const auto cma = transport::check_cma();  // --transport cma (share/doc/transport-cma.md)
    std::printf("\nsame-host transport cma: %s (%s)\n", cma.ok ? "usable" : "NOT usable", cma.detail.c_str());
    const auto dipc = transport::check_device_ipc();  // device_ipc (share/doc/transport-device.md)
    if (dipc.ok) {
      std::printf("device IPC: available (%s: %s)\n", dipc.backend.c_str(), dipc.detail.c_str());
    } else {
      std::printf("device IPC: NOT available (%s)\n", dipc.detail.c_str());
    }
    const auto paths = transport::check_device_paths();
    std::printf("staged device path: %s (%s)\n", paths.staged_ok ? "available" : "NOT available", paths.staged.c_str());
    std::printf("CUDA-aware UCX: %s (%s)\n", paths.ucx_cuda_aware ? "yes" : "no", paths.ucx.c_str());
    std::printf("CUDA-aware MPI: %s\n", cuda_aware_mpi().c_str());
  }
  return 0;
}

}  // namespace tensorhub::cli
