// What Hub::status() returns (included by tensorhub/hub.hpp): every model the hub knows, its
// versions, their holders and, for sliced versions, the global tensors their boxes tile.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tensorhub/core/dtype.hpp"

namespace tensorhub {

// One holder (reference) of a version.
struct HolderInfo {
  std::uint64_t worker = 0;
  std::string host;        // empty once the worker has left
  int rank = -1;           // rank in its job communicator, -1 if unknown
  bool origin = false;     // a publisher (not a relaying reader)
  bool withdrawn = false;  // unpublished, its reads draining
  std::uint32_t pins = 0;  // reads in flight from it
  std::uint64_t chunks_held = 0;
  std::uint64_t chunks_total = 0;
};

// A global tensor of a version (resharding): name, dtype, global shape, and the published boxes
// that tile it.
struct GlobalTensorInfo {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<std::int64_t> shape;
  std::uint32_t boxes = 0;
  bool operator==(const GlobalTensorInfo&) const = default;
};

struct VersionInfo {
  std::uint64_t version = 0;
  bool committed = false;
  bool readable = false;  // from live holders or from its snapshot file
  std::uint32_t retained = 0;
  std::uint32_t holders = 0;
  std::uint32_t origin_holders = 0;
  std::uint32_t pins = 0;
  std::uint64_t bytes = 0;
  std::string snapshot;                            // snapshot file backing the version, empty if none
  std::vector<HolderInfo> holder_list;             // every holder, withdrawn ones included
  std::uint32_t tensors = 0;                       // published tensors (committed versions)
  std::vector<GlobalTensorInfo> global_tensors{};  // the global tensors their boxes tile, if any
};

struct ModelInfo {
  std::string model;
  std::vector<VersionInfo> versions;
};

}  // namespace tensorhub
