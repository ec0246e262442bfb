// Helpers shared by the snapshot tests (unit, MPI, h5py sample writer): a per-test temporary
// directory, tensors that own deterministic contents, and manifests built the way the hub
// builds them (describe_shard + assemble_manifest).
#pragma once

#include <stdlib.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "tensorhub/core/manifest.hpp"
#include "tensorhub/core/tensor.hpp"

namespace tensorhub::snapshot::testing {

// mkdtemp under $TMPDIR (or /tmp); removed with everything in it on destruction.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "tensorhub-snap-XXXXXX").string();
    if (mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// A tensor with its own buffer, filled with bytes that depend on offset and seed.
struct OwnedTensor {
  std::vector<unsigned char> bytes;
  Tensor tensor;
};

inline OwnedTensor make_tensor(std::string name, DType dtype, std::vector<std::int64_t> shape, unsigned seed) {
  OwnedTensor t;
  TensorSpec spec{std::move(name), dtype, std::move(shape)};
  t.bytes.resize(spec.bytes());
  for (std::size_t i = 0; i < t.bytes.size(); ++i) {
    t.bytes[i] = static_cast<unsigned char>((i * 131 + seed * 17 + (i >> 9) * 7 + (i >> 17)) & 0xff);
  }
  if (dtype == DType::kBool) {
    for (auto& b : t.bytes) b &= 1;
  }
  t.tensor.spec = std::move(spec);
  t.tensor.data = t.bytes.data();
  t.tensor.bytes = t.bytes.size();
  return t;
}

inline std::vector<Tensor> views(const std::vector<OwnedTensor>& owned) {
  std::vector<Tensor> out;
  for (const auto& o : owned) out.push_back(o.tensor);
  return out;
}

// A buffer of the same spec, zeroed, to read into.
inline OwnedTensor empty_like(const Tensor& t) {
  OwnedTensor o;
  o.bytes.assign(t.spec.bytes(), 0);
  o.tensor.spec = t.spec;
  o.tensor.data = o.bytes.data();
  o.tensor.bytes = o.bytes.size();
  return o;
}

// One manifest from per-shard tensor lists (shard i = shards[i]).
inline Manifest manifest_of(const std::string& model, std::uint64_t version, std::uint64_t chunk_bytes,
                            const std::vector<std::vector<Tensor>>& shards) {
  std::vector<ShardManifest> parts;
  for (std::uint32_t s = 0; s < shards.size(); ++s) parts.push_back(describe_shard(s, shards[s], chunk_bytes));
  return assemble_manifest(model, version, chunk_bytes, std::move(parts));
}

inline std::vector<unsigned char> slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline void spit(const std::string& path, const std::vector<unsigned char>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

// Offset of the first occurrence of `needle` in `hay`, or npos.
inline std::size_t find_bytes(const std::vector<unsigned char>& hay, const unsigned char* needle, std::size_t n) {
  if (hay.size() < n) return std::string::npos;
  for (std::size_t i = 0; i + n <= hay.size(); ++i) {
    if (std::memcmp(hay.data() + i, needle, n) == 0) return i;
  }
  return std::string::npos;
}

// float -> bfloat16 bits by truncation (exact for the values the tests use).
inline std::uint16_t bf16_bits(float f) {
  std::uint32_t u = 0;
  std::memcpy(&u, &f, 4);
  return static_cast<std::uint16_t>(u >> 16);
}

}  // namespace tensorhub::snapshot::testing
