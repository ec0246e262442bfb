// The topology file: what `tensorhub probe --out FILE` writes and load_topology_file() reads
// back (format: share/doc/topology.md, "Topology file"). It records each rank's labels, each
// host's hardware summary and, when measured, the pairwise MPI_Get bandwidth/latency matrix.
// A hand-written file that only lists hosts with their dc/rack labels is valid too; that is how
// labels are given to resolve_labels() without environment variables.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tensorhub/topo/labels.hpp"
#include "tensorhub/topo/node.hpp"

namespace tensorhub::topo {

inline constexpr int kTopologyFileVersion = 1;

struct RankEntry {
  std::int32_t rank = 0;
  Labels labels;
  bool operator==(const RankEntry&) const = default;
};

struct HostEntry {
  std::string host;
  std::string dc;
  std::string rack;
  std::int32_t leader = -1;              // lowest rank on the host, -1 if no ranks recorded
  std::vector<std::int32_t> ranks;       // ranks on this host, ascending
  std::optional<NodeTopology> topology;  // hwloc summary, discovered by the leader
  bool operator==(const HostEntry&) const = default;
};

// Passive-target MPI_Get measurements between endpoints (ranks). Element [i][j][s]: endpoint i
// reads sizes[s] bytes from endpoint j's window. Diagonal entries are NaN (null in JSON).
struct GetMatrix {
  std::string scope = "rank";                                    // "rank": every rank; "host": one leader rank per host
  std::vector<std::int32_t> endpoints;                           // ranks, in row/column order
  std::vector<std::uint64_t> sizes;                              // bytes, ascending
  std::uint32_t iterations = 0;                                  // timed iterations per size
  std::uint32_t warmup = 0;                                      // untimed iterations first
  std::uint32_t window = 0;                                      // MPI_Rgets in flight per bandwidth iteration
  std::vector<std::vector<std::vector<double>>> bandwidth_gbps;  // 1e9 bytes/s
  std::vector<std::vector<std::vector<double>>> latency_us;      // one MPI_Rget + MPI_Wait
  bool operator==(const GetMatrix&) const = default;             // NaN != NaN: compare with care
};

struct TopologyFile {
  int version = kTopologyFileVersion;
  std::string created;  // UTC, ISO 8601
  std::string command;  // how it was made
  std::vector<RankEntry> ranks;
  std::vector<HostEntry> hosts;
  std::optional<GetMatrix> matrix;

  // The entry of `host`, or nullptr.
  const HostEntry* find_host(std::string_view host) const;
};

// Throws TopologyFileError naming the file when it cannot be read, is not JSON, is not a
// TensorHub topology file, has a newer major version, or a field has the wrong type.
TopologyFile load_topology_file(const std::string& path);
// Throws TopologyFileError if the file cannot be written.
void save_topology_file(const std::string& path, const TopologyFile& file);

// JSON codecs (nlohmann ADL hooks): `nlohmann::json j = node;`, `j.get<NodeTopology>()`.
// from_json throws nlohmann::json exceptions on a malformed document.
void to_json(nlohmann::json& j, const NodeTopology& node);
void from_json(const nlohmann::json& j, NodeTopology& node);
void to_json(nlohmann::json& j, const Labels& labels);
void from_json(const nlohmann::json& j, Labels& labels);
void to_json(nlohmann::json& j, const GetMatrix& m);
void from_json(const nlohmann::json& j, GetMatrix& m);
void to_json(nlohmann::json& j, const TopologyFile& file);
void from_json(const nlohmann::json& j, TopologyFile& file);

}  // namespace tensorhub::topo
