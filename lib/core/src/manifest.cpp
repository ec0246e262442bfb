#include "tensorhub/core/manifest.hpp"

#include <algorithm>
#include <limits>
#include <set>
#include <utility>

#include "manifest_detail.hpp"
#include "tensorhub/core/checksum.hpp"
#include "tensorhub/core/error.hpp"
#include "tensorhub/core/limits.hpp"
#include "tensorhub/core/units.hpp"

namespace tensorhub {

std::uint64_t Manifest::total_bytes() const {
  std::uint64_t total = 0;
  for (const auto& t : tensors) total += t.spec.bytes();
  return total;
}

std::optional<std::uint32_t> Manifest::find(std::string_view tensor_name) const {
  for (std::uint32_t i = 0; i < tensors.size(); ++i) {
    if (tensors[i].spec.name == tensor_name) return i;
  }
  return std::nullopt;
}

std::uint32_t chunk_count(std::uint64_t bytes, std::uint64_t chunk_bytes) {
  require(chunk_bytes > 0, "chunk_bytes is zero");
  const std::uint64_t n = bytes / chunk_bytes + (bytes % chunk_bytes != 0 ? 1 : 0);  // no overflow
  if (n > std::numeric_limits<std::uint32_t>::max()) {
    throw UserError(format_bytes(bytes) + " in chunks of " + format_bytes(chunk_bytes) +
                    " is more than 2^32-1 chunks; use a larger chunk size");
  }
  return static_cast<std::uint32_t>(n);
}

namespace detail {

void check_chunk_bytes(std::uint64_t chunk_bytes) {
  constexpr std::uint64_t kMin = 4096;
  constexpr std::uint64_t kMax = 1ull << 30;
  if (chunk_bytes < kMin || chunk_bytes > kMax) {
    throw UserError("chunk size " + format_bytes(chunk_bytes) + " out of range [4 KiB, 1 GiB]");
  }
}

void check_box(const TensorSpec& spec) {
  if (!spec.sliced()) {
    if (!spec.global_shape.empty() || !spec.box_offset.empty()) {
      throw UserError("tensor '" + spec.name + "' has a box but no global tensor name");
    }
    return;
  }
  if (spec.global_shape.size() != spec.shape.size() || spec.box_offset.size() != spec.shape.size()) {
    throw UserError("tensor '" + spec.name + "' " + describe(spec) +
                    ": the global shape and the box offset need one entry per dimension of the tensor");
  }
  if (!inside(spec.global_shape, spec.box())) {
    throw UserError("tensor '" + spec.name + "' " + describe(spec) + ": its box " + describe(spec.box()) +
                    " lies outside the global tensor");
  }
}

void check_spec(const TensorSpec& spec, std::set<std::string>& seen, std::uint64_t chunk_bytes) {
  if (spec.name.empty()) throw UserError("tensor with an empty name");
  if (!seen.insert(spec.name).second) throw UserError("tensor '" + spec.name + "' appears twice");
  if (spec.shape.size() > limits::kMaxDims) {
    throw UserError("tensor '" + spec.name + "' has " + std::to_string(spec.shape.size()) + " dimensions (at most " +
                    std::to_string(limits::kMaxDims) + ")");
  }
  const auto bytes = spec.bytes();  // throws UserError naming the tensor when it overflows
  if (bytes > limits::kMaxTensorBytes) {
    throw UserError("tensor '" + spec.name + "' " + describe(spec) + " is " + format_bytes(bytes) + " (at most " +
                    format_bytes(limits::kMaxTensorBytes) + " per tensor)");
  }
  if (bytes == 0) {
    throw UserError("tensor '" + spec.name + "' " + describe(spec) +
                    " has zero bytes; zero-size tensors cannot be published");
  }
  check_box(spec);
  try {
    chunk_count(bytes, chunk_bytes);
  } catch (const UserError& e) {
    throw UserError("tensor '" + spec.name + "' " + describe(spec) + ": " + e.what());
  }
}

void VersionTotals::add(const TensorSpec& spec, std::uint64_t chunk_bytes) {
  ++tensors;
  bytes += spec.bytes();  // each at most kMaxTensorBytes: no overflow below 2^23 tensors
  chunks += chunk_count(spec.bytes(), chunk_bytes);
  if (tensors > limits::kMaxTensorsPerVersion) {
    throw UserError("more than " + std::to_string(limits::kMaxTensorsPerVersion) + " tensors in one version");
  }
  if (bytes > limits::kMaxVersionBytes) {
    throw UserError("more than " + format_bytes(limits::kMaxVersionBytes) + " in one version");
  }
  if (chunks > limits::kMaxChunksPerVersion) {
    throw UserError("more than " + std::to_string(limits::kMaxChunksPerVersion) +
                    " chunks in one version; use a larger chunk size");
  }
}

}  // namespace detail

using detail::check_chunk_bytes;
using detail::check_spec;

ShardManifest describe_shard_layout(std::uint32_t shard, std::span<const Tensor> tensors, std::uint64_t chunk_bytes,
                                    ChecksumAlgorithm algorithm) {
  check_chunk_bytes(chunk_bytes);
  checksum_algorithm_name(algorithm);  // a known one
  if (tensors.empty()) throw UserError("publish of a shard with no tensors");
  ShardManifest out;
  out.shard = shard;
  out.checksum_algorithm = algorithm;
  std::set<std::string> seen;
  detail::VersionTotals totals;
  for (const auto& t : tensors) {
    check_spec(t.spec, seen, chunk_bytes);
    totals.add(t.spec, chunk_bytes);
    if (t.data == nullptr) throw UserError("tensor '" + t.spec.name + "' has a null data pointer");
    if (t.bytes < t.spec.bytes()) {
      throw UserError("tensor '" + t.spec.name + "' " + describe(t.spec) + " needs " + std::to_string(t.spec.bytes()) +
                      " bytes but its buffer has " + std::to_string(t.bytes));
    }
    out.tensors.push_back(t.spec);
    out.checksums.emplace_back(chunk_count(t.spec.bytes(), chunk_bytes), 0);
  }
  return out;
}

ShardManifest describe_shard(std::uint32_t shard, std::span<const Tensor> tensors, std::uint64_t chunk_bytes,
                             ChecksumAlgorithm algorithm) {
  for (const auto& t : tensors) {
    if (t.memory != MemoryKind::kHost) {
      throw UserError("tensor '" + t.spec.name +
                      "': describe_shard hashes only host memory on the CPU (device memory: "
                      "describe_shard_layout, then checksums computed on the device)");
    }
  }
  ShardManifest out = describe_shard_layout(shard, tensors, chunk_bytes, algorithm);
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const auto* base = static_cast<const unsigned char*>(tensors[i].data);
    const std::uint64_t bytes = tensors[i].spec.bytes();
    auto& sums = out.checksums[i];
    for (std::uint32_t c = 0; c < sums.size(); ++c) {
      const std::uint64_t off = c * chunk_bytes;
      sums[c] = checksum64(algorithm, base + off, std::min(chunk_bytes, bytes - off));
    }
  }
  return out;
}

void validate_shard(const ShardManifest& shard, std::uint64_t chunk_bytes) {
  check_chunk_bytes(chunk_bytes);
  if (shard.tensors.empty()) throw UserError("shard " + std::to_string(shard.shard) + " has no tensors");
  checksum_algorithm_name(shard.checksum_algorithm);  // a known one
  if (shard.checksums.size() != shard.tensors.size()) {
    throw UserError("shard " + std::to_string(shard.shard) + ": checksum list does not match tensors");
  }
  std::set<std::string> seen;
  detail::VersionTotals totals;
  for (std::size_t i = 0; i < shard.tensors.size(); ++i) {
    check_spec(shard.tensors[i], seen, chunk_bytes);
    totals.add(shard.tensors[i], chunk_bytes);
    if (shard.checksums[i].size() != chunk_count(shard.tensors[i].bytes(), chunk_bytes)) {
      throw UserError("tensor '" + shard.tensors[i].name + "': wrong number of chunk checksums");
    }
  }
}

Manifest assemble_manifest(std::string model, std::uint64_t version, std::uint64_t chunk_bytes,
                           std::vector<ShardManifest> shards) {
  std::sort(shards.begin(), shards.end(),
            [](const ShardManifest& a, const ShardManifest& b) { return a.shard < b.shard; });
  Manifest m;
  m.model = std::move(model);
  m.version = version;
  m.chunk_bytes = chunk_bytes;
  m.num_shards = static_cast<std::uint32_t>(shards.size());
  if (!shards.empty()) m.checksum_algorithm = shards.front().checksum_algorithm;
  std::set<std::string> seen;
  detail::VersionTotals totals;
  for (std::uint32_t s = 0; s < shards.size(); ++s) {
    if (shards[s].shard != s) throw UserError("shard " + std::to_string(s) + " is missing");
    validate_shard(shards[s], chunk_bytes);
    if (shards[s].checksum_algorithm != m.checksum_algorithm) {
      throw UserError("shard " + std::to_string(s) + " has " +
                      std::string(checksum_algorithm_name(shards[s].checksum_algorithm)) + " checksums, shard 0 " +
                      std::string(checksum_algorithm_name(m.checksum_algorithm)));
    }
    for (std::size_t i = 0; i < shards[s].tensors.size(); ++i) {
      const auto& spec = shards[s].tensors[i];
      if (!seen.insert(spec.name).second) {
        throw UserError("tensor '" + spec.name + "' is published by more than one shard");
      }
      totals.add(spec, chunk_bytes);
      if (m.chunks.size() + shards[s].checksums[i].size() > std::numeric_limits<std::uint32_t>::max()) {
        throw UserError("tensor '" + spec.name + "': the version has more than 2^32-1 chunks; use a larger chunk size");
      }
      TensorEntry e;
      e.spec = spec;
      e.shard = s;
      e.first_chunk = static_cast<std::uint32_t>(m.chunks.size());
      e.num_chunks = static_cast<std::uint32_t>(shards[s].checksums[i].size());
      const auto tensor_index = static_cast<std::uint32_t>(m.tensors.size());
      for (std::uint32_t c = 0; c < e.num_chunks; ++c) {
        const std::uint64_t off = c * chunk_bytes;
        m.chunks.push_back(
            ChunkSpec{tensor_index, off, std::min(chunk_bytes, spec.bytes() - off), shards[s].checksums[i][c]});
      }
      m.tensors.push_back(std::move(e));
    }
  }
  detail::check_global_tensors(m.tensors);
  return m;
}

}  // namespace tensorhub
