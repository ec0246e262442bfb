// Checks shared by manifest.cpp (shards) and manifest_check.cpp (whole manifests).
#pragma once

#include <cstdint>
#include <set>
#include <string>

#include "tensorhub/core/manifest.hpp"
#include "tensorhub/core/tensor.hpp"

namespace tensorhub::detail {

// Chunk size in [4 KiB, 1 GiB]; throws UserError.
void check_chunk_bytes(std::uint64_t chunk_bytes);

// A tensor to publish: non-empty name not in `seen` (added), size that fits in 64 bits and is
// not zero, fewer than 2^32 chunks of `chunk_bytes`. Throws UserError naming the tensor.
// Also at most limits::kMaxDims dimensions and limits::kMaxTensorBytes.
void check_spec(const TensorSpec& spec, std::set<std::string>& seen, std::uint64_t chunk_bytes);

// A tensor's own box fields (check_spec calls it): none, or a global name with a global shape and
// an offset of the tensor's rank whose box lies inside. Throws UserError naming the tensor.
void check_box(const TensorSpec& spec);

// A version's global tensors: for each global name, every box has the same dtype and global
// shape, and the boxes tile the global tensor exactly (check_tiling); no plain tensor has a
// global tensor's name. Throws UserError naming the global tensor.
void check_global_tensors(const std::vector<TensorEntry>& tensors);

// Running totals of one shard or version, against the per-version limits (tensors, bytes,
// chunks: tensorhub/core/limits.hpp); add() throws UserError when one is exceeded. Call after
// check_spec.
struct VersionTotals {
  std::uint64_t tensors = 0;
  std::uint64_t bytes = 0;
  std::uint64_t chunks = 0;
  void add(const TensorSpec& spec, std::uint64_t chunk_bytes);
};

}  // namespace tensorhub::detail
