// `tensorhub probe`, shared between its files: probe.cpp (options, the MPI-free local
// probe, --load), probe_mpi.cpp (labels and hardware of every rank, the MPI_Get matrix)
// and probe_print.cpp (tables).
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "tensorhub/topo/topology_file.hpp"

namespace tensorhub::cli {

struct ProbeConfig {
  std::string xml;    // hwloc XML export to use instead of discovering this machine
  std::string load;   // topology file to print
  std::string out;    // topology file to write
  bool json = false;  // print the topology file as JSON instead of tables
  std::string scope = "rank";
  bool matrix = true;  // measure MPI_Get between ranks (with 2+ ranks)
  std::string min_bytes = "8";
  std::string max_bytes = "4MiB";
  std::uint32_t factor = 4;
  std::uint32_t iters = 50;
  std::uint32_t warmup = 5;
  std::uint32_t window = 16;
  std::string command;  // the command line, recorded in the file
};

// Message sizes of the sweep: min, min*f, min*f^2, ... up to max, plus max itself.
std::vector<std::uint64_t> probe_sizes(const ProbeConfig& c);

// MPI_Rgets in flight per bandwidth iteration for `size`-byte messages: `window`, but at most
// 64 MiB in flight (and at least one).
inline std::uint32_t effective_window(std::uint64_t size, std::uint32_t window) {
  const std::uint64_t cap = (64ull << 20) / (size ? size : 1);
  return static_cast<std::uint32_t>(cap < 1 ? 1 : (cap < window ? cap : window));
}

// Runs the probe on every rank of MPI_COMM_WORLD (inside run_mpi_command).
int run_probe_mpi(const ProbeConfig& c, int rank);

// This node's hardware: live discovery, or the --xml file.
topo::NodeTopology probe_node(const ProbeConfig& c);

// UTC now, ISO 8601.
std::string utc_now();

// Prints the file (tables, or JSON with --json) and writes it to --out if given.
void probe_emit(const ProbeConfig& c, const topo::TopologyFile& file);

// Human-readable report of a topology file (ranks, each host's hardware, the matrix).
void print_topology_file(std::FILE* out, const topo::TopologyFile& file);

}  // namespace tensorhub::cli
