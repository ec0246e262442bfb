#include "tensorhub/core/manifest_json.hpp"

#include <nlohmann/json.hpp>

#include "tensorhub/core/error.hpp"

namespace tensorhub {

using nlohmann::json;

std::string manifest_to_json(const Manifest& m) {
  json j;
  j["format"] = 1;
  j["model"] = m.model;
  j["version"] = m.version;
  j["chunk_bytes"] = m.chunk_bytes;
  j["num_shards"] = m.num_shards;
  json tensors = json::array();
  for (const auto& t : m.tensors) {
    json sums = json::array();
    for (std::uint32_t c = 0; c < t.num_chunks; ++c) sums.push_back(m.chunks[t.first_chunk + c].checksum);
    tensors.push_back({{"name", t.spec.name},
                       {"dtype", std::string(dtype_name(t.spec.dtype))},
                       {"shape", t.spec.shape},
                       {"shard", t.shard},
                       {"checksums", sums}});
  }
  j["tensors"] = tensors;
  return j.dump();
}

Manifest manifest_from_json(std::string_view text) {
  try {
    const json j = json::parse(text);
    if (!j.is_object()) throw UserError("manifest JSON is not an object");
    if (j.value("format", 0) != 1) throw UserError("manifest JSON has an unsupported format version");
    const auto chunk_bytes = j.at("chunk_bytes").get<std::uint64_t>();
    const auto num_shards = j.at("num_shards").get<std::uint32_t>();
    if (num_shards == 0 || num_shards > 1u << 16) throw UserError("manifest JSON: bad num_shards");
    std::vector<ShardManifest> shards(num_shards);
    for (std::uint32_t s = 0; s < num_shards; ++s) shards[s].shard = s;
    for (const auto& t : j.at("tensors")) {
      const auto shard = t.at("shard").get<std::uint32_t>();
      if (shard >= num_shards) throw UserError("manifest JSON: tensor shard index out of range");
      TensorSpec spec{t.at("name").get<std::string>(), parse_dtype(t.at("dtype").get<std::string>()),
                      t.at("shape").get<std::vector<std::int64_t>>()};
      shards[shard].tensors.push_back(std::move(spec));
      shards[shard].checksums.push_back(t.at("checksums").get<std::vector<std::uint64_t>>());
    }
    return assemble_manifest(j.at("model").get<std::string>(), j.at("version").get<std::uint64_t>(),
                             chunk_bytes, std::move(shards));
  } catch (const json::exception& e) {
    throw UserError(std::string("malformed manifest JSON: ") + e.what());
  }
}

}  // namespace tensorhub
