// Manifests: what a version contains and how it is cut into chunks.
//
// A publishing group of N ranks publishes N shards; shard i lists the tensors rank i holds and
// one checksum per chunk (XXH3-64 in new manifests, XXH64 in older ones: checksum.hpp). The coordinator assembles the
// shards, in shard order, into the version's Manifest: every tensor, which shard holds it, and a global chunk numbering
// (tensor by tensor, chunk by chunk) that readers, holders and the planner share.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tensorhub/core/checksum.hpp"
#include "tensorhub/core/tensor.hpp"

namespace tensorhub {

constexpr std::uint64_t kDefaultChunkBytes = 4ull << 20;

struct ChunkSpec {
  std::uint32_t tensor = 0;    // index into Manifest::tensors
  std::uint64_t offset = 0;    // byte offset inside the tensor
  std::uint64_t length = 0;    // bytes
  std::uint64_t checksum = 0;  // of the bytes, under the manifest's checksum_algorithm
  bool operator==(const ChunkSpec&) const = default;
};

struct ShardManifest {
  std::uint32_t shard = 0;
  std::vector<TensorSpec> tensors;
  std::vector<std::vector<std::uint64_t>> checksums;                 // [tensor][chunk]
  ChecksumAlgorithm checksum_algorithm = kDefaultChecksumAlgorithm;  // what `checksums` are
  bool operator==(const ShardManifest&) const = default;
};

struct TensorEntry {
  TensorSpec spec;
  std::uint32_t shard = 0;
  std::uint32_t first_chunk = 0;
  std::uint32_t num_chunks = 0;
  bool operator==(const TensorEntry&) const = default;
};

struct Manifest {
  std::string model;
  std::uint64_t version = 0;
  std::uint64_t chunk_bytes = kDefaultChunkBytes;
  std::uint32_t num_shards = 1;
  std::vector<TensorEntry> tensors;
  std::vector<ChunkSpec> chunks;
  ChecksumAlgorithm checksum_algorithm = kDefaultChecksumAlgorithm;  // what chunks[].checksum are

  std::uint64_t total_bytes() const;
  std::optional<std::uint32_t> find(std::string_view tensor_name) const;
  bool operator==(const Manifest&) const = default;
};

// Number of chunks a tensor of `bytes` is cut into (the last one may be shorter). Throws
// UserError when that is 2^32 or more (chunk ids are 32 bits).
std::uint32_t chunk_count(std::uint64_t bytes, std::uint64_t chunk_bytes);

// Checks a shard's tensors for publishing (non-empty unique names, non-zero sizes, buffers
// large enough, chunk size sane) and computes per-chunk checksums of host memory.
// Throws UserError naming the offending tensor (also for a tensor that is not host memory).
ShardManifest describe_shard(std::uint32_t shard, std::span<const Tensor> tensors, std::uint64_t chunk_bytes,
                             ChecksumAlgorithm algorithm = kDefaultChecksumAlgorithm);

// describe_shard without touching the bytes: the same checks, `checksums` sized per tensor
// (chunk_count zeros each) for a later pass (e.g. a hash job, or the device's XXH3 kernel for
// device memory, which this accepts) to fill. O(tensors + chunks).
ShardManifest describe_shard_layout(std::uint32_t shard, std::span<const Tensor> tensors, std::uint64_t chunk_bytes,
                                    ChecksumAlgorithm algorithm = kDefaultChecksumAlgorithm);

// Validates shard-level structure without touching memory (used by the coordinator on input
// from the wire): also a known checksum algorithm. Throws UserError.
void validate_shard(const ShardManifest& shard, std::uint64_t chunk_bytes);

// Structural checks of a whole manifest from outside (the wire, a snapshot file): a model name,
// a sane chunk size, at least one tensor; unique non-empty tensor names; every tensor's size
// fits in 64 bits and is not zero, its shard in range, its chunks consecutive, in order and cut
// at chunk_bytes; no chunk outside a tensor. Throws UserError naming the manifest and tensor.
void validate_manifest(const Manifest& m);

// The first difference between two manifests, or "" when they describe the same bytes: the same
// tensors by name, dtype and shape, the same chunk size, chunking, checksum algorithm and
// checksums (sums under different algorithms cannot be compared: that is a difference, named as
// such, after the layout compared equal). Model, version,
// shard layout and tensor order may differ. `a_name` / `b_name` name the two in the text (e.g.
// "the version", "the snapshot"). Meant for manifests that passed validate_manifest; one whose
// chunk ranges lie outside its chunk list compares as different (never read out of bounds).
std::string manifest_difference(const Manifest& a, const Manifest& b, std::string_view a_name = "the first manifest",
                                std::string_view b_name = "the second manifest");

// Assembles shards 0..N-1 (any order in, shard order out) into a version manifest.
// Throws UserError on duplicate tensor names across shards, missing shards, or shards whose
// checksums use different algorithms.
Manifest assemble_manifest(std::string model, std::uint64_t version, std::uint64_t chunk_bytes,
                           std::vector<ShardManifest> shards);

}  // namespace tensorhub
