#include "tensorhub/core/manifest_json.hpp"

#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>

#include "tensorhub/core/checksum.hpp"
#include "tensorhub/core/error.hpp"

namespace tensorhub {

using nlohmann::json;

std::string manifest_to_json(const Manifest& m) {
  json j;
  // Format 2 adds "checksum_algorithm"; format 1 (no such key) means XXH64 sums.
  j["format"] = 2;
  j["checksum_algorithm"] = std::string(checksum_algorithm_name(m.checksum_algorithm));
  j["model"] = m.model;
  j["version"] = m.version;
  j["chunk_bytes"] = m.chunk_bytes;
  j["num_shards"] = m.num_shards;
  json tensors = json::array();
  for (const auto& t : m.tensors) {
    json sums = json::array();
    for (std::uint32_t c = 0; c < t.num_chunks; ++c) sums.push_back(m.chunks[t.first_chunk + c].checksum);
    json entry = {{"name", t.spec.name},
                  {"dtype", std::string(dtype_name(t.spec.dtype))},
                  {"shape", t.spec.shape},
                  {"shard", t.shard},
                  {"checksums", sums}};
    if (t.spec.sliced()) {  // a box of a global tensor (optional key: older readers ignore it)
      entry["global"] = {{"name", t.spec.global_name}, {"shape", t.spec.global_shape}, {"offset", t.spec.box_offset}};
    }
    tensors.push_back(std::move(entry));
  }
  j["tensors"] = tensors;
  return j.dump();
}

namespace {

// nlohmann::json converts negative numbers to unsigned silently, truncates to narrower types and
// converts floats with a plain cast (undefined behaviour out of range); refuse all of them.
template <typename T>
T unsigned_field(const json& j, const char* key) {
  const auto& v = j.at(key);
  if (!v.is_number_unsigned() || v.get<std::uint64_t>() > std::numeric_limits<T>::max())
    throw UserError(std::string("manifest JSON: '") + key + "' must be a non-negative integer in range");
  return v.get<T>();
}

}  // namespace

Manifest manifest_from_json(std::string_view text) {
  try {
    const json j = json::parse(text);
    if (!j.is_object()) throw UserError("manifest JSON is not an object");
    const auto format = j.find("format");
    if (format == j.end() || !format->is_number_unsigned() || format->get<std::uint64_t>() < 1 ||
        format->get<std::uint64_t>() > 2)
      throw UserError("manifest JSON has an unsupported format version (this build reads 1 and 2)");
    auto algorithm = ChecksumAlgorithm::kXxh64;  // format 1
    if (format->get<std::uint64_t>() == 2) {
      const auto& name = j.at("checksum_algorithm");
      const auto parsed = name.is_string() ? parse_checksum_algorithm(name.get<std::string>()) : std::nullopt;
      if (!parsed) throw UserError("manifest JSON: unknown checksum_algorithm " + name.dump());
      algorithm = *parsed;
    }
    const auto chunk_bytes = unsigned_field<std::uint64_t>(j, "chunk_bytes");
    const auto num_shards = unsigned_field<std::uint32_t>(j, "num_shards");
    if (num_shards == 0 || num_shards > 1u << 16) throw UserError("manifest JSON: bad num_shards");
    std::vector<ShardManifest> shards(num_shards);
    for (std::uint32_t s = 0; s < num_shards; ++s) {
      shards[s].shard = s;
      shards[s].checksum_algorithm = algorithm;
    }
    for (const auto& t : j.at("tensors")) {
      const auto shard = unsigned_field<std::uint32_t>(t, "shard");
      for (const auto& c : t.at("checksums")) {
        if (!c.is_number_unsigned()) throw UserError("manifest JSON: checksums must be non-negative integers");
      }
      if (shard >= num_shards) throw UserError("manifest JSON: tensor shard index out of range");
      for (const auto& d : t.at("shape")) {
        if (!d.is_number_integer()) throw UserError("manifest JSON: shape entries must be integers");
      }
      TensorSpec spec{t.at("name").get<std::string>(), parse_dtype(t.at("dtype").get<std::string>()),
                      t.at("shape").get<std::vector<std::int64_t>>()};
      if (const auto g = t.find("global"); g != t.end()) {
        for (const char* key : {"shape", "offset"}) {
          for (const auto& d : g->at(key)) {
            if (!d.is_number_integer()) throw UserError("manifest JSON: global shape and offset must be integers");
          }
        }
        spec.global_name = g->at("name").get<std::string>();
        spec.global_shape = g->at("shape").get<std::vector<std::int64_t>>();
        spec.box_offset = g->at("offset").get<std::vector<std::int64_t>>();
        if (spec.global_name.empty()) throw UserError("manifest JSON: tensor '" + spec.name + "': empty global name");
      }
      shards[shard].tensors.push_back(std::move(spec));
      shards[shard].checksums.push_back(t.at("checksums").get<std::vector<std::uint64_t>>());
    }
    return assemble_manifest(j.at("model").get<std::string>(), unsigned_field<std::uint64_t>(j, "version"), chunk_bytes,
                             std::move(shards));
  } catch (const json::exception& e) {
    throw UserError(std::string("malformed manifest JSON: ") + e.what());
  }
}

}  // namespace tensorhub
