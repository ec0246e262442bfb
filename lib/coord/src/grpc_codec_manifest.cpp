// grpc_codec, the manifest. A committed manifest's chunk table follows from its tensors (chunks
// numbered tensor by tensor, cut at chunk_bytes) except for the checksums, so the wire carries
// only those (Manifest.chunk_checksums, 8 bytes per chunk, packed) whenever the table is that
// canonical one; a table that is not goes out in full (Manifest.chunks). The decoder rebuilds and
// checks the canonical table: every tensor's chunk range must be where the cut puts it.
#include <algorithm>
#include <cstdint>
#include <string>

#include "grpc_codec.hpp"
#include "grpc_codec_util.hpp"
#include "tensorhub/core/error.hpp"

namespace tensorhub::coord::codec {

using detail::malformed;

namespace {

// True when `m.chunks` is exactly the table derived from `m.tensors` and `m.chunk_bytes`.
bool canonical_chunks(const Manifest& m) {
  std::uint64_t next = 0;
  for (std::uint32_t t = 0; t < m.tensors.size(); ++t) {
    const auto& e = m.tensors[t];
    const std::uint64_t bytes = e.spec.bytes();
    if (e.first_chunk != next || e.num_chunks != chunk_count(bytes, m.chunk_bytes)) return false;
    for (std::uint32_t k = 0; k < e.num_chunks; ++k) {
      const auto i = e.first_chunk + k;
      if (i >= m.chunks.size()) return false;
      const auto& c = m.chunks[i];
      const std::uint64_t offset = std::uint64_t{k} * m.chunk_bytes;
      if (c.tensor != t || c.offset != offset || c.length != std::min(m.chunk_bytes, bytes - offset)) return false;
    }
    next += e.num_chunks;
  }
  return next == m.chunks.size();
}

// The canonical table of `out` from its tensors and `checksums`; malformed() if they disagree.
void derive_chunks(Manifest& out, const google::protobuf::RepeatedField<std::uint64_t>& checksums,
                   const std::string& where) {
  std::uint64_t next = 0;
  for (std::uint32_t t = 0; t < out.tensors.size(); ++t) {
    const auto& e = out.tensors[t];
    const std::uint64_t bytes = e.spec.bytes();  // UserError if it overflows
    if (e.first_chunk != next || e.num_chunks != chunk_count(bytes, out.chunk_bytes)) {
      malformed(where + ": tensor '" + e.spec.name + "' chunk range does not follow from its size");
    }
    next += e.num_chunks;
    if (next > static_cast<std::uint64_t>(checksums.size())) {
      malformed(where + ": " + std::to_string(checksums.size()) + " chunk checksums for at least " +
                std::to_string(next) + " chunks");
    }
  }
  if (next != static_cast<std::uint64_t>(checksums.size())) {
    malformed(where + ": " + std::to_string(checksums.size()) + " chunk checksums for " + std::to_string(next) +
              " chunks");
  }
  out.chunks.reserve(next);
  for (std::uint32_t t = 0; t < out.tensors.size(); ++t) {
    const auto& e = out.tensors[t];
    const std::uint64_t bytes = e.spec.bytes();
    for (std::uint32_t k = 0; k < e.num_chunks; ++k) {
      const std::uint64_t offset = std::uint64_t{k} * out.chunk_bytes;
      out.chunks.push_back(ChunkSpec{t, offset, std::min(out.chunk_bytes, bytes - offset),
                                     checksums[static_cast<int>(e.first_chunk + k)]});
    }
  }
}

}  // namespace

pb::Manifest to_proto(const Manifest& manifest) {
  pb::Manifest out;
  out.set_model(manifest.model);
  out.set_version(manifest.version);
  out.set_chunk_bytes(manifest.chunk_bytes);
  out.set_num_shards(manifest.num_shards);
  out.mutable_tensors()->Reserve(static_cast<int>(manifest.tensors.size()));
  for (const auto& t : manifest.tensors) *out.add_tensors() = to_proto(t);
  if (manifest.chunk_bytes > 0 && canonical_chunks(manifest)) {
    auto* sums = out.mutable_chunk_checksums();
    sums->Reserve(static_cast<int>(manifest.chunks.size()));
    for (const auto& c : manifest.chunks) sums->AddAlreadyReserved(c.checksum);
  } else {
    out.mutable_chunks()->Reserve(static_cast<int>(manifest.chunks.size()));
    for (const auto& c : manifest.chunks) *out.add_chunks() = to_proto(c);
  }
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
  if (manifest.chunk_checksums_size() > 0) {
    if (manifest.chunks_size() > 0) malformed(where + ": both a chunk table and compact chunk checksums");
    derive_chunks(out, manifest.chunk_checksums(), where);
  } else {
    out.chunks.reserve(static_cast<std::size_t>(manifest.chunks_size()));
    for (const auto& c : manifest.chunks()) out.chunks.push_back(from_proto(c));
  }
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
