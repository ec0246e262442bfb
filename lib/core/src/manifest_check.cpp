// validate_manifest and manifest_difference (tensorhub/core/manifest.hpp): the one structural
// check of a whole manifest and the one comparison of two, used by the coordinator (attach a
// snapshot), the hub (read a snapshot) and the snapshot reader.
#include <algorithm>
#include <cstdio>
#include <set>
#include <string>

#include "manifest_detail.hpp"
#include "tensorhub/core/error.hpp"
#include "tensorhub/core/manifest.hpp"
#include "tensorhub/core/validate.hpp"

namespace tensorhub {
namespace {

std::string hex(std::uint64_t x) {
  char buf[19];
  std::snprintf(buf, sizeof buf, "0x%016llx", static_cast<unsigned long long>(x));
  return buf;
}

std::string manifest_name(const Manifest& m) { return "manifest of '" + m.model + "' v" + std::to_string(m.version); }

// Is every tensor's chunk range inside the chunk list? (manifest_difference indexes it.)
bool ranges_in_bounds(const Manifest& m) {
  return std::all_of(m.tensors.begin(), m.tensors.end(), [&](const TensorEntry& e) {
    return std::uint64_t{e.first_chunk} + e.num_chunks <= m.chunks.size();
  });
}

}  // namespace

void validate_manifest(const Manifest& m) {
  validate_name("manifest's model name", m.model);
  const std::string what = manifest_name(m);
  try {
    detail::check_chunk_bytes(m.chunk_bytes);
  } catch (const UserError& e) {
    throw UserError(what + ": " + e.what());
  }
  if (m.num_shards == 0) throw UserError(what + ": zero shards");
  try {
    checksum_algorithm_name(m.checksum_algorithm);
  } catch (const UserError& e) {
    throw UserError(what + ": " + e.what());
  }
  if (m.tensors.empty()) throw UserError(what + ": no tensors");
  std::set<std::string> names;
  detail::VersionTotals totals;
  std::uint64_t next_chunk = 0;
  for (std::uint32_t t = 0; t < m.tensors.size(); ++t) {
    const auto& e = m.tensors[t];
    try {
      validate_name("tensor name", e.spec.name);
      detail::check_spec(e.spec, names, m.chunk_bytes);  // name, dims, 64-bit size, chunk count
      totals.add(e.spec, m.chunk_bytes);                 // tensors, bytes, chunks per version
    } catch (const UserError& err) {
      throw UserError(what + ": " + err.what());
    }
    if (e.shard >= m.num_shards) throw UserError(what + ": tensor '" + e.spec.name + "' names a shard out of range");
    const auto bytes = e.spec.bytes();
    if (e.first_chunk != next_chunk || e.num_chunks != chunk_count(bytes, m.chunk_bytes)) {
      throw UserError(what + ": tensor '" + e.spec.name + "' has a bad chunk range");
    }
    for (std::uint32_t c = 0; c < e.num_chunks; ++c) {
      const std::uint64_t i = std::uint64_t{e.first_chunk} + c;
      if (i >= m.chunks.size()) throw UserError(what + ": tensor '" + e.spec.name + "' chunk range exceeds the list");
      const auto& ch = m.chunks[i];
      const auto offset = std::uint64_t{c} * m.chunk_bytes;
      if (ch.tensor != t || ch.offset != offset || ch.length != std::min(m.chunk_bytes, bytes - offset)) {
        throw UserError(what + ": tensor '" + e.spec.name + "' chunk " + std::to_string(c) + " is malformed");
      }
    }
    next_chunk += e.num_chunks;
  }
  if (next_chunk != m.chunks.size()) throw UserError(what + ": chunks that belong to no tensor");
  try {
    detail::check_global_tensors(m.tensors);
  } catch (const UserError& err) {
    throw UserError(what + ": " + err.what());
  }
}

std::string manifest_difference(const Manifest& a, const Manifest& b, std::string_view a_name,
                                std::string_view b_name) {
  const std::string an(a_name);
  const std::string bn(b_name);
  if (!ranges_in_bounds(a) || !ranges_in_bounds(b)) return "a chunk range lies outside its manifest's chunk list";
  if (a.tensors.size() != b.tensors.size()) {
    return an + " has " + std::to_string(a.tensors.size()) + " tensors, " + bn + " " + std::to_string(b.tensors.size());
  }
  if (a.chunk_bytes != b.chunk_bytes) {
    return "chunk size " + std::to_string(a.chunk_bytes) + " in " + an + ", " + std::to_string(b.chunk_bytes) + " in " +
           bn;
  }
  for (const auto& e : a.tensors) {
    const auto idx = b.find(e.spec.name);
    if (!idx) return "tensor '" + e.spec.name + "' is missing from " + bn;
    const auto& f = b.tensors[*idx];
    if (f.spec != e.spec) {
      return "tensor '" + e.spec.name + "' is " + describe(e.spec) + " in " + an + " but " + describe(f.spec) + " in " +
             bn;
    }
    if (f.num_chunks != e.num_chunks) return "tensor '" + e.spec.name + "' has a different number of chunks";
    if (a.checksum_algorithm != b.checksum_algorithm) continue;  // the layout first, the sums below
    for (std::uint32_t c = 0; c < e.num_chunks; ++c) {
      const auto& x = a.chunks[e.first_chunk + c];
      const auto& y = b.chunks[f.first_chunk + c];
      if (x.offset != y.offset || x.length != y.length) {
        return "tensor '" + e.spec.name + "' chunk " + std::to_string(c) + " covers different bytes";
      }
      if (x.checksum != y.checksum) {
        return "tensor '" + e.spec.name + "' chunk " + std::to_string(c) + ": checksum " + hex(x.checksum) + " in " +
               an + ", " + hex(y.checksum) + " in " + bn;
      }
    }
  }
  if (a.checksum_algorithm != b.checksum_algorithm) {
    return "the checksums cannot be compared: " + an + " has " +
           std::string(checksum_algorithm_name(a.checksum_algorithm)) + " sums, " + bn + " " +
           std::string(checksum_algorithm_name(b.checksum_algorithm));
  }
  return "";
}

}  // namespace tensorhub
