// lib/core manifest_json.hpp: manifest -> JSON -> manifest round trips (multi-shard, multi-chunk,
// full-range 64-bit checksums) and rejection of malformed JSON, wrong format versions, missing
// or mistyped fields and structurally invalid manifests, all as UserError.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "tensorhub/core/error.hpp"
#include "tensorhub/core/manifest.hpp"
#include "tensorhub/core/manifest_json.hpp"

namespace tensorhub {
namespace {

constexpr std::uint64_t kChunk = 4096;

ShardManifest shard_of(std::uint32_t shard, std::vector<TensorSpec> specs, std::uint64_t first_sum) {
  ShardManifest s;
  s.shard = shard;
  for (auto& spec : specs) {
    std::vector<std::uint64_t> sums(chunk_count(spec.bytes(), kChunk));
    for (auto& x : sums) x = first_sum++;
    s.checksums.push_back(std::move(sums));
    s.tensors.push_back(std::move(spec));
  }
  return s;
}

Manifest sample_manifest() {
  // Checksums near 2^64 make sure no precision is lost through JSON numbers.
  const std::uint64_t big = std::numeric_limits<std::uint64_t>::max() - 10;
  auto s0 = shard_of(0, {{"embed", DType::kBF16, {100, 64}}, {"norm", DType::kF32, {64}}}, big);
  auto s1 = shard_of(1, {{"layer.0.w", DType::kF16, {3, 3000}}, {"step", DType::kI64, {}}}, 1);
  return assemble_manifest("llama-7b", 1234567890123ull, kChunk, {s0, s1});
}

// Replaces the first occurrence of `from` in `s` (which must be present) with `to`.
std::string replaced(std::string s, const std::string& from, const std::string& to) {
  const auto pos = s.find(from);
  EXPECT_NE(pos, std::string::npos) << "'" << from << "' not in " << s;
  if (pos != std::string::npos) s.replace(pos, from.size(), to);
  return s;
}

TEST(ManifestJson, RoundTripIsEqual) {
  const Manifest m = sample_manifest();
  ASSERT_GT(m.chunks.size(), m.tensors.size());  // some tensor has several chunks
  const std::string json = manifest_to_json(m);
  const Manifest back = manifest_from_json(json);
  EXPECT_EQ(back, m);
  EXPECT_EQ(back.chunks.front().checksum, std::numeric_limits<std::uint64_t>::max() - 10);
  // And the encoding is stable.
  EXPECT_EQ(manifest_to_json(back), json);
}

TEST(ManifestJson, RoundTripKeepsNonDefaultChunkSize) {
  ShardManifest s;
  s.shard = 0;
  s.tensors.push_back({"w", DType::kU8, {3 * 8192 + 1}});
  s.checksums.push_back({11, 22, 33, 44});
  const Manifest m = assemble_manifest("m", 7, 8192, {s});
  const Manifest back = manifest_from_json(manifest_to_json(m));
  EXPECT_EQ(back, m);
  EXPECT_EQ(back.chunk_bytes, 8192u);
  EXPECT_EQ(back.chunks.size(), 4u);
}

TEST(ManifestJson, MalformedJsonIsUserError) {
  for (const char* bad : {"", "{", "not json", "{\"format\":1,}", "[1,2,3]", "42", "null"}) {
    EXPECT_THROW(manifest_from_json(bad), UserError) << "input: " << bad;
  }
}

TEST(ManifestJson, WrongFormatVersionIsUserError) {
  const std::string json = manifest_to_json(sample_manifest());
  ASSERT_NE(json.find("\"format\":2"), std::string::npos) << json;
  EXPECT_THROW(manifest_from_json(replaced(json, "\"format\":2", "\"format\":3")), UserError);
  EXPECT_THROW(manifest_from_json(replaced(json, "\"format\":2", "\"format\":0")), UserError);
  EXPECT_THROW(manifest_from_json(replaced(json, "\"format\":2", "\"format\":\"2\"")), UserError);
  EXPECT_THROW(manifest_from_json(replaced(json, "\"format\":2,", "")), UserError);  // missing
}

// Format 2 names the algorithm; format 1 (no such key) is XXH64.
TEST(ManifestJson, ChecksumAlgorithmRoundTripsAndFormat1IsXxh64) {
  Manifest m = sample_manifest();
  ASSERT_EQ(m.checksum_algorithm, ChecksumAlgorithm::kXxh3_64);
  const std::string json = manifest_to_json(m);
  ASSERT_NE(json.find("\"checksum_algorithm\":\"xxh3_64\""), std::string::npos) << json;
  EXPECT_EQ(manifest_from_json(json), m);
  m.checksum_algorithm = ChecksumAlgorithm::kXxh64;
  EXPECT_EQ(manifest_from_json(manifest_to_json(m)), m);
  const std::string v1 =
      replaced(replaced(json, "\"format\":2", "\"format\":1"), "\"checksum_algorithm\":\"xxh3_64\",", "");
  ASSERT_EQ(v1.find("checksum_algorithm"), std::string::npos) << v1;
  EXPECT_EQ(manifest_from_json(v1).checksum_algorithm, ChecksumAlgorithm::kXxh64);
  EXPECT_THROW(manifest_from_json(replaced(json, "\"xxh3_64\"", "\"md5\"")), UserError);
  EXPECT_THROW(manifest_from_json(replaced(json, "\"xxh3_64\"", "1")), UserError);
  EXPECT_THROW(manifest_from_json(replaced(json, "\"checksum_algorithm\":\"xxh3_64\",", "")), UserError);
}

TEST(ManifestJson, MissingOrMistypedFieldsAreUserErrors) {
  const std::string json = manifest_to_json(sample_manifest());
  EXPECT_THROW(manifest_from_json(replaced(json, "\"chunk_bytes\"", "\"chunk_size\"")), UserError);
  EXPECT_THROW(manifest_from_json(replaced(json, "\"model\"", "\"name\"")), UserError);
  EXPECT_THROW(manifest_from_json(replaced(json, "\"tensors\"", "\"weights\"")), UserError);
  EXPECT_THROW(manifest_from_json(replaced(json, "\"version\":1234567890123", "\"version\":\"7\"")), UserError);
}

// Regression test for a fixed bug (lib/core/src/manifest_json.cpp, manifest_from_json): nlohmann's get<uint64_t>()
// converts a negative JSON integer without complaint, so "version":-1 becomes v18446744073709551615.
//
TEST(ManifestJson, NegativeVersionIsUserError) {
  const std::string json = manifest_to_json(sample_manifest());
  EXPECT_THROW(manifest_from_json(replaced(json, "\"version\":1234567890123", "\"version\":-1")), UserError);
}

TEST(ManifestJson, InvalidContentIsUserError) {
  const std::string json = manifest_to_json(sample_manifest());
  // Unknown dtype.
  EXPECT_THROW(manifest_from_json(replaced(json, "\"dtype\":\"bf16\"", "\"dtype\":\"fp8\"")), UserError);
  // Negative dimension.
  EXPECT_THROW(manifest_from_json(replaced(json, "[100,64]", "[100,-64]")), UserError);
  // Shard index out of range.
  EXPECT_THROW(manifest_from_json(replaced(json, "\"shard\":1", "\"shard\":5")), UserError);
  // num_shards of zero, or a shard left without tensors.
  EXPECT_THROW(manifest_from_json(replaced(json, "\"num_shards\":2", "\"num_shards\":0")), UserError);
  EXPECT_THROW(manifest_from_json(replaced(json, "\"num_shards\":2", "\"num_shards\":3")), UserError);
  // A checksum list that does not match the tensor's chunk count ("norm": 256 bytes, one chunk;
  // its checksum follows the 4 of "embed").
  const std::string norm_sums = "\"checksums\":[" + std::to_string(std::numeric_limits<std::uint64_t>::max() - 6) + "]";
  EXPECT_THROW(manifest_from_json(replaced(json, norm_sums, norm_sums.substr(0, norm_sums.size() - 1) + ",1]")),
               UserError);
  // A chunk size out of range.
  EXPECT_THROW(manifest_from_json(replaced(json, "\"chunk_bytes\":4096", "\"chunk_bytes\":100")), UserError);
}

TEST(ManifestJson, DuplicateTensorNamesAreUserError) {
  const std::string json = manifest_to_json(sample_manifest());
  EXPECT_THROW(manifest_from_json(replaced(json, "\"name\":\"step\"", "\"name\":\"embed\"")), UserError);
}

}  // namespace
}  // namespace tensorhub
