#include "header.hpp"

#include <utility>

#include "tensorhub/core/error.hpp"
#include "tensorhub/core/manifest.hpp"
#include "tensorhub/core/manifest_json.hpp"

namespace tensorhub::snapshot::format {
namespace {

constexpr std::size_t kMaxRank = 32;  // H5S_MAX_RANK

[[noreturn]] void bad(std::string_view file, const std::string& what) {
  throw SnapshotError("snapshot '" + std::string(file) + "': " + what);
}

template <typename T>
const T& required(const std::optional<T>& value, const char* attribute, std::string_view file) {
  if (!value) bad(file, std::string("root attribute '") + attribute + "' is missing");
  return *value;
}

}  // namespace

const char* checksums_attribute(ChecksumAlgorithm algorithm) {
  return algorithm == ChecksumAlgorithm::kXxh64 ? kAttrChecksums : kAttrChecksumsXxh3;
}

std::uint64_t checked_bytes(const TensorSpec& spec, std::string_view file) {
  if (spec.shape.size() > kMaxRank) {
    bad(file,
        "tensor '" + spec.name + "' has " + std::to_string(spec.shape.size()) + " dimensions; HDF5 allows at most 32");
  }
  std::uint64_t n = 1;
  for (const auto d : spec.shape) {
    if (d < 0) bad(file, "tensor '" + spec.name + "' has a negative dimension");
    const auto u = static_cast<std::uint64_t>(d);
    if (u != 0 && n > kMaxTensorBytes / u) bad(file, "tensor '" + spec.name + "': shape too large");
    n *= u;
  }
  const std::uint64_t size = dtype_size(spec.dtype);
  if (n > kMaxTensorBytes / size) bad(file, "tensor '" + spec.name + "': shape too large");
  return n * size;
}

Header parse_header(const RawHeader& raw, std::string_view file) {
  if (!raw.format_version) {
    bad(file, std::string("not a TensorHub snapshot: the root group has no attribute '") + kAttrFormatVersion + "'");
  }
  if (*raw.format_version < kOldestFormatVersion || *raw.format_version > kFormatVersion) {
    bad(file, "format version " + std::to_string(*raw.format_version) + ", this build reads " +
                  std::to_string(kOldestFormatVersion) + " to " + std::to_string(kFormatVersion));
  }
  Header h;
  h.format_version = static_cast<std::uint32_t>(*raw.format_version);
  const auto& text = required(raw.manifest_json, kAttrManifest, file);
  try {
    h.manifest = manifest_from_json(text);
  } catch (const UserError& e) {
    bad(file, std::string("root attribute '") + kAttrManifest + "': " + e.what());
  }
  const Manifest& m = h.manifest;
  if (h.format_version < kFirstXxh3FormatVersion && m.checksum_algorithm != ChecksumAlgorithm::kXxh64) {
    bad(file, "format version " + std::to_string(h.format_version) + " stores XXH64 sums, but root attribute '" +
                  kAttrManifest + "' says " + std::string(checksum_algorithm_name(m.checksum_algorithm)));
  }
  if (required(raw.model, kAttrModel, file) != m.model) {
    bad(file, std::string("root attribute '") + kAttrModel + "' is '" + *raw.model + "' but the manifest says '" +
                  m.model + "'");
  }
  if (required(raw.version, kAttrVersion, file) != m.version) {
    bad(file, std::string("root attribute '") + kAttrVersion + "' is " + std::to_string(*raw.version) +
                  " but the manifest says " + std::to_string(m.version));
  }
  if (required(raw.chunk_bytes, kAttrChunkBytes, file) != m.chunk_bytes) {
    bad(file, std::string("root attribute '") + kAttrChunkBytes + "' is " + std::to_string(*raw.chunk_bytes) +
                  " but the manifest says " + std::to_string(m.chunk_bytes));
  }
  try {
    validate_manifest(m);  // sizes that fit in 64 bits, chunk ranges (the JSON decoder built it)
  } catch (const UserError& e) {
    bad(file, std::string("root attribute '") + kAttrManifest + "': " + e.what());
  }
  for (const auto& t : m.tensors) checked_bytes(t.spec, file);  // what HDF5 can store
  h.created_by = raw.created_by.value_or("");
  h.created_at = raw.created_at.value_or("");
  return h;
}

RawHeader make_header(const Manifest& manifest, std::string created_by, std::string created_at) {
  RawHeader raw;
  raw.format_version = kFormatVersion;
  raw.model = manifest.model;
  raw.version = manifest.version;
  raw.chunk_bytes = manifest.chunk_bytes;
  raw.manifest_json = manifest_to_json(manifest);
  raw.created_by = std::move(created_by);
  raw.created_at = std::move(created_at);
  return raw;
}

std::string dataset_name(std::string_view tensor_name) {
  if (tensor_name == ".") return "%2E";
  std::string out;
  out.reserve(tensor_name.size());
  for (const char c : tensor_name) {
    if (c == '%') {
      out += "%25";
    } else if (c == '/') {
      out += "%2F";
    } else if (c == '\0') {
      out += "%00";
    } else {
      out += c;
    }
  }
  return out;
}

std::optional<std::string> tensor_name(std::string_view name) {
  if (name == "%2E") return std::string(".");
  if (name.empty() || name == ".") return std::nullopt;
  std::string out;
  for (std::size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    if (c == '/' || c == '\0') return std::nullopt;
    if (c != '%') {
      out += c;
      continue;
    }
    const auto code = name.substr(i, 3);
    if (code == "%25") {
      out += '%';
    } else if (code == "%2F") {
      out += '/';
    } else if (code == "%00") {
      out += '\0';
    } else {
      return std::nullopt;
    }
    i += 2;
  }
  return out;
}

std::string dataset_path(std::string_view tensor) { return std::string(kTensorsGroup) + "/" + dataset_name(tensor); }

}  // namespace tensorhub::snapshot::format
