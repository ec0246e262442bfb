// grpc_codec, core types: dtype, tensor spec, chunk, tensor entry, shard manifest and manifest.
#include <algorithm>
#include <cstdint>
#include <string>

#include "grpc_codec.hpp"
#include "grpc_codec_util.hpp"
#include "tensorhub/core/error.hpp"

namespace tensorhub::coord::codec {

using detail::append_all;
using detail::malformed;
using detail::to_vector;

pb::DType to_proto(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return pb::DTYPE_F32;
    case DType::kF16:
      return pb::DTYPE_F16;
    case DType::kBF16:
      return pb::DTYPE_BF16;
    case DType::kF64:
      return pb::DTYPE_F64;
    case DType::kI8:
      return pb::DTYPE_I8;
    case DType::kU8:
      return pb::DTYPE_U8;
    case DType::kI16:
      return pb::DTYPE_I16;
    case DType::kI32:
      return pb::DTYPE_I32;
    case DType::kI64:
      return pb::DTYPE_I64;
    case DType::kBool:
      return pb::DTYPE_BOOL;
  }
  throw ContractViolation("internal error: unknown DType enumerator " + std::to_string(static_cast<int>(dtype)));
}

DType from_proto(pb::DType dtype) {
  switch (dtype) {
    case pb::DTYPE_F32:
      return DType::kF32;
    case pb::DTYPE_F16:
      return DType::kF16;
    case pb::DTYPE_BF16:
      return DType::kBF16;
    case pb::DTYPE_F64:
      return DType::kF64;
    case pb::DTYPE_I8:
      return DType::kI8;
    case pb::DTYPE_U8:
      return DType::kU8;
    case pb::DTYPE_I16:
      return DType::kI16;
    case pb::DTYPE_I32:
      return DType::kI32;
    case pb::DTYPE_I64:
      return DType::kI64;
    case pb::DTYPE_BOOL:
      return DType::kBool;
    default:
      break;  // DTYPE_UNSPECIFIED, and values from a newer or broken peer
  }
  malformed("unknown dtype value " + std::to_string(static_cast<int>(dtype)));
}

pb::TensorSpec to_proto(const TensorSpec& spec) {
  pb::TensorSpec out;
  out.set_name(spec.name);
  out.set_dtype(to_proto(spec.dtype));
  append_all(out.mutable_shape(), spec.shape);
  return out;
}

TensorSpec from_proto(const pb::TensorSpec& spec) {
  TensorSpec out;
  out.name = spec.name();
  try {
    out.dtype = from_proto(spec.dtype());
  } catch (const UserError&) {
    malformed("tensor '" + spec.name() + "': unknown dtype value " + std::to_string(spec.dtype()));
  }
  out.shape = to_vector<std::int64_t>(spec.shape());
  if (std::any_of(out.shape.begin(), out.shape.end(), [](std::int64_t d) { return d < 0; })) {
    malformed("tensor '" + out.name + "' has a negative dimension");
  }
  return out;
}

pb::ChunkSpec to_proto(const ChunkSpec& chunk) {
  pb::ChunkSpec out;
  out.set_tensor(chunk.tensor);
  out.set_offset(chunk.offset);
  out.set_length(chunk.length);
  out.set_checksum(chunk.checksum);
  return out;
}

ChunkSpec from_proto(const pb::ChunkSpec& chunk) {
  return ChunkSpec{chunk.tensor(), chunk.offset(), chunk.length(), chunk.checksum()};
}

namespace {

// ChecksumAlgorithm <-> pb::ChecksumAlgorithm: the same numbers (0 = a peer before the field).
pb::ChecksumAlgorithm algorithm_to_proto(ChecksumAlgorithm a) { return static_cast<pb::ChecksumAlgorithm>(a); }

ChecksumAlgorithm algorithm_from_proto(int value, const std::string& where) {
  if (value != static_cast<int>(ChecksumAlgorithm::kXxh64) && value != static_cast<int>(ChecksumAlgorithm::kXxh3_64)) {
    malformed(where + ": unknown checksum algorithm " + std::to_string(value));
  }
  return static_cast<ChecksumAlgorithm>(value);
}

}  // namespace

pb::ShardManifest to_proto(const ShardManifest& shard) {
  pb::ShardManifest out;
  out.set_shard(shard.shard);
  for (const auto& t : shard.tensors) *out.add_tensors() = to_proto(t);
  for (const auto& row : shard.checksums) append_all(out.add_checksums()->mutable_values(), row);
  out.set_checksum_algorithm(algorithm_to_proto(shard.checksum_algorithm));
  return out;
}

ShardManifest from_proto(const pb::ShardManifest& shard) {
  ShardManifest out;
  out.shard = shard.shard();
  out.tensors.reserve(static_cast<std::size_t>(shard.tensors_size()));
  for (const auto& t : shard.tensors()) out.tensors.push_back(from_proto(t));
  out.checksums.reserve(static_cast<std::size_t>(shard.checksums_size()));
  for (const auto& row : shard.checksums()) out.checksums.push_back(to_vector<std::uint64_t>(row.values()));
  out.checksum_algorithm = algorithm_from_proto(shard.checksum_algorithm(), "shard " + std::to_string(out.shard));
  return out;
}

pb::TensorEntry to_proto(const TensorEntry& entry) {
  pb::TensorEntry out;
  *out.mutable_spec() = to_proto(entry.spec);
  out.set_shard(entry.shard);
  out.set_first_chunk(entry.first_chunk);
  out.set_num_chunks(entry.num_chunks);
  return out;
}

TensorEntry from_proto(const pb::TensorEntry& entry) {
  if (!entry.has_spec()) malformed("tensor entry without a spec");
  TensorEntry out;
  out.spec = from_proto(entry.spec());
  out.shard = entry.shard();
  out.first_chunk = entry.first_chunk();
  out.num_chunks = entry.num_chunks();
  return out;
}

pb::Manifest to_proto(const Manifest& manifest) {
  pb::Manifest out;
  out.set_model(manifest.model);
  out.set_version(manifest.version);
  out.set_chunk_bytes(manifest.chunk_bytes);
  out.set_num_shards(manifest.num_shards);
  out.mutable_tensors()->Reserve(static_cast<int>(manifest.tensors.size()));
  for (const auto& t : manifest.tensors) *out.add_tensors() = to_proto(t);
  out.mutable_chunks()->Reserve(static_cast<int>(manifest.chunks.size()));
  for (const auto& c : manifest.chunks) *out.add_chunks() = to_proto(c);
  out.set_checksum_algorithm(algorithm_to_proto(manifest.checksum_algorithm));
  return out;
}

Manifest from_proto(const pb::Manifest& manifest) {
  Manifest out;
  out.model = manifest.model();
  out.version = manifest.version();
  out.chunk_bytes = manifest.chunk_bytes();
  out.num_shards = manifest.num_shards();
  const std::string where = "manifest of '" + out.model + "' version " + std::to_string(out.version);
  if (out.chunk_bytes == 0) malformed(where + ": chunk size is zero");
  out.checksum_algorithm = algorithm_from_proto(manifest.checksum_algorithm(), where);
  out.tensors.reserve(static_cast<std::size_t>(manifest.tensors_size()));
  for (const auto& t : manifest.tensors()) out.tensors.push_back(from_proto(t));
  out.chunks.reserve(static_cast<std::size_t>(manifest.chunks_size()));
  for (const auto& c : manifest.chunks()) out.chunks.push_back(from_proto(c));
  // Readers index chunks by tensor and tensors by chunk; check every index once here.
  for (const auto& e : out.tensors) {
    if (e.shard >= out.num_shards) {
      malformed(where + ": tensor '" + e.spec.name + "' names shard " + std::to_string(e.shard) + " of " +
                std::to_string(out.num_shards));
    }
    if (std::uint64_t{e.first_chunk} + e.num_chunks > out.chunks.size()) {
      malformed(where + ": tensor '" + e.spec.name + "' chunk range exceeds the chunk list");
    }
  }
  for (std::size_t i = 0; i < out.chunks.size(); ++i) {
    if (out.chunks[i].tensor >= out.tensors.size()) {
      malformed(where + ": chunk " + std::to_string(i) + " names tensor " + std::to_string(out.chunks[i].tensor) +
                " of " + std::to_string(out.tensors.size()));
    }
  }
  return out;
}

}  // namespace tensorhub::coord::codec
