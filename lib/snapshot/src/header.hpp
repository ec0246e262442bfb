// Format v1 names and the header codec: the root attributes of a snapshot as raw values in,
// a validated Manifest out. No HDF5 here, so the fuzzer (tests/fuzz) drives exactly the parsing
// `inspect` uses. Layout and attribute meanings: share/doc/snapshot-format.md.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "tensorhub/core/manifest.hpp"
#include "tensorhub/snapshot/snapshot.hpp"

namespace tensorhub::snapshot::format {

// Root group attributes.
inline constexpr const char* kAttrFormatVersion = "tensorhub_format_version";
inline constexpr const char* kAttrModel = "model";
inline constexpr const char* kAttrVersion = "version";
inline constexpr const char* kAttrChunkBytes = "chunk_bytes";
inline constexpr const char* kAttrManifest = "manifest";
inline constexpr const char* kAttrCreatedBy = "created_by";
inline constexpr const char* kAttrCreatedAt = "created_at";

// Groups and the committed bfloat16 datatype.
inline constexpr const char* kTensorsGroup = "/tensors";
inline constexpr const char* kTypesGroup = "/types";
inline constexpr const char* kBf16TypePath = "/types/bfloat16";

// Per-dataset (and, for tensorhub_dtype, per-committed-type) attributes.
inline constexpr const char* kAttrName = "tensorhub_name";
inline constexpr const char* kAttrDtype = "tensorhub_dtype";
// The per-chunk sums; the name says the algorithm (formats 1 and 2: always XXH64).
inline constexpr const char* kAttrChecksums = "tensorhub_chunk_xxh64";
inline constexpr const char* kAttrChecksumsXxh3 = "tensorhub_chunk_xxh3_64";
// The dataset attribute holding sums under `algorithm`.
const char* checksums_attribute(ChecksumAlgorithm algorithm);
inline constexpr const char* kAttrShard = "tensorhub_shard";

// Largest tensor the format accepts (bytes); keeps every size computation far from overflow.
inline constexpr std::uint64_t kMaxTensorBytes = 1ull << 56;

// Root attribute values as read from a file; nullopt = attribute absent.
struct RawHeader {
  std::optional<std::uint64_t> format_version;
  std::optional<std::string> model;
  std::optional<std::uint64_t> version;
  std::optional<std::uint64_t> chunk_bytes;
  std::optional<std::string> manifest_json;
  std::optional<std::string> created_by;
  std::optional<std::string> created_at;
};

struct Header {
  std::uint32_t format_version = 0;
  Manifest manifest;
  std::string created_by;
  std::string created_at;
};

// Validates the raw attributes: format version (a different one -> "format version N, this
// build reads 1 to 3"), manifest JSON (formats 1 and 2: XXH64 sums only) (parsed and assembled), model / version /
// chunk_bytes equal to the manifest's, the manifest valid (validate_manifest), every tensor storable by HDF5
// (checked_bytes).
// Throws SnapshotError naming `file` and the attribute; nothing else escapes.
Header parse_header(const RawHeader& raw, std::string_view file);

// The attribute values `write` stores for `manifest` (inverse of parse_header).
RawHeader make_header(const Manifest& manifest, std::string created_by, std::string created_at);

// Bytes of `spec`, or SnapshotError (naming `file`) if a dimension is negative or the product
// exceeds kMaxTensorBytes, or the shape has more than 32 dimensions (HDF5's limit).
std::uint64_t checked_bytes(const TensorSpec& spec, std::string_view file);

// HDF5 link name of a tensor's dataset inside /tensors: the tensor name with '%', '/' and NUL
// percent-escaped ("%25", "%2F", "%00"), and a name of exactly "." written "%2E". Dots and
// everything else stay, so "layers.0.q_proj" is /tensors/layers.0.q_proj.
std::string dataset_name(std::string_view tensor_name);
// Inverse of dataset_name; nullopt for a name dataset_name cannot produce.
std::optional<std::string> tensor_name(std::string_view dataset_name);
// "/tensors/" + dataset_name(tensor_name).
std::string dataset_path(std::string_view tensor_name);

}  // namespace tensorhub::snapshot::format
