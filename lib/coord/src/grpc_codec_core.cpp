// grpc_codec, core types: dtype, tensor spec, chunk, tensor entry and shard manifest (the
// manifest: grpc_codec_manifest.cpp).
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
  if (spec.sliced()) {
    out.set_global_name(spec.global_name);
    append_all(out.mutable_global_shape(), spec.global_shape);
    append_all(out.mutable_box_offset(), spec.box_offset);
  }
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
  out.global_name = spec.global_name();
  out.global_shape = to_vector<std::int64_t>(spec.global_shape());
  out.box_offset = to_vector<std::int64_t>(spec.box_offset());
  // The box itself is checked with the rest of the tensor (validate_shard / validate_manifest).
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

// ChecksumAlgorithm <-> pb::ChecksumAlgorithm: the same numbers (0 = a peer before the field).
pb::ChecksumAlgorithm algorithm_to_proto(ChecksumAlgorithm a) { return static_cast<pb::ChecksumAlgorithm>(a); }

ChecksumAlgorithm algorithm_from_proto(int value, const std::string& where) {
  if (value != static_cast<int>(ChecksumAlgorithm::kXxh64) && value != static_cast<int>(ChecksumAlgorithm::kXxh3_64)) {
    malformed(where + ": unknown checksum algorithm " + std::to_string(value));
  }
  return static_cast<ChecksumAlgorithm>(value);
}

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

}  // namespace tensorhub::coord::codec
