// Checks shared by manifest.cpp (shards) and manifest_check.cpp (whole manifests).
#pragma once

#include <cstdint>
#include <set>
#include <string>

#include "tensorhub/core/tensor.hpp"

namespace tensorhub::detail {

// Chunk size in [4 KiB, 1 GiB]; throws UserError.
void check_chunk_bytes(std::uint64_t chunk_bytes);

// A tensor to publish: non-empty name not in `seen` (added), size that fits in 64 bits and is
// not zero, fewer than 2^32 chunks of `chunk_bytes`. Throws UserError naming the tensor.
// Also at most limits::kMaxDims dimensions and limits::kMaxTensorBytes.
void check_spec(const TensorSpec& spec, std::set<std::string>& seen, std::uint64_t chunk_bytes);

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
