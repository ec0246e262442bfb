// lib/core checksum.hpp: known-answer vectors for XXH3-64 and XXH64 (the published ones for ""
// and "abc", and one per XXH3 length class and block boundary over a fixed byte pattern, which
// lib/device's XXH3 kernel must also produce: tests/device/test_device_xxh3.cpp), the algorithm
// names, and manifests that carry and compare their algorithm.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "tensorhub/core/checksum.hpp"
#include "tensorhub/core/error.hpp"
#include "tensorhub/core/manifest.hpp"
#include "tensorhub/core/shard_hash.hpp"

namespace tensorhub {
namespace {

struct Vector {
  std::size_t bytes;
  std::uint64_t xxh3;
  std::uint64_t xxh64;
};

// bytes[i] = i * 131 + 7 (mod 256), the first `bytes` of them.
constexpr Vector kVectors[] = {
    {0, 0x2d06800538d394c2ull, 0xef46db3751d8e999ull},    {1, 0x4c5cca45d0f4811full, 0xa96c7f0ce858bbb7ull},
    {3, 0x6e3e2670e61106acull, 0xbed43740ee6332bbull},    {4, 0x5c4c63133443d03full, 0xfa212ae44b3bb23dull},
    {8, 0xf9fd4dd0b04d78f5ull, 0x994b676b71ce94ddull},    {9, 0x7c20df9712c26edfull, 0x572b84c18b983af8ull},
    {16, 0x86abf6baccea0858ull, 0x94ad0095e72b24d5ull},   {17, 0xb58bf5dc5022d071ull, 0x1464f2eff23b5fe1ull},
    {128, 0x10d17f72c0ccba41ull, 0x0430e433b792e757ull},  {129, 0x1648bdc3db49d1a2ull, 0x1f9708e5a00618faull},
    {240, 0xb6cfaf343fab81e6ull, 0xca0b65cc61295ca7ull},  {241, 0x956cae592c67279eull, 0x0ffefe0dfc875cf4ull},
    {1024, 0x70bd377d9574f4bbull, 0x5960af0c625acfb7ull}, {4096, 0x9ddd66c14af0daffull, 0xcf05adf75aca30cfull},
    {5000, 0xe4007929540f095cull, 0x60b4eca7b7cbdc86ull},
};

std::vector<unsigned char> pattern(std::size_t n) {
  std::vector<unsigned char> b(n);
  for (std::size_t i = 0; i < n; ++i) b[i] = static_cast<unsigned char>(i * 131u + 7u);
  return b;
}

TEST(Checksum, PublishedVectors) {
  EXPECT_EQ(checksum64(ChecksumAlgorithm::kXxh3_64, "abc", 3), 0x78af5f94892f3950ull);
  EXPECT_EQ(checksum64(ChecksumAlgorithm::kXxh64, "abc", 3), 0x44bc2cf5ad770999ull);
  EXPECT_EQ(checksum64(ChecksumAlgorithm::kXxh3_64, "", 0), 0x2d06800538d394c2ull);
  EXPECT_EQ(checksum64(ChecksumAlgorithm::kXxh64, "", 0), 0xef46db3751d8e999ull);
}

TEST(Checksum, EveryLengthClass) {
  const auto b = pattern(5000);
  for (const auto& v : kVectors) {
    EXPECT_EQ(checksum64(ChecksumAlgorithm::kXxh3_64, b.data(), v.bytes), v.xxh3) << v.bytes << " bytes";
    EXPECT_EQ(checksum64(ChecksumAlgorithm::kXxh64, b.data(), v.bytes), v.xxh64) << v.bytes << " bytes";
  }
  // The algorithm-less overload stays XXH64 (wire fingerprints that must not change).
  EXPECT_EQ(checksum64(b.data(), 5000), kVectors[14].xxh64);
}

TEST(Checksum, NamesRoundTripAndUnknownOnesAreRefused) {
  for (const auto a : {ChecksumAlgorithm::kXxh64, ChecksumAlgorithm::kXxh3_64}) {
    EXPECT_EQ(parse_checksum_algorithm(checksum_algorithm_name(a)), a);
  }
  EXPECT_EQ(checksum_algorithm_name(ChecksumAlgorithm::kXxh3_64), "xxh3_64");
  EXPECT_FALSE(parse_checksum_algorithm("XXH3").has_value());
  EXPECT_THROW(checksum_algorithm_name(static_cast<ChecksumAlgorithm>(7)), UserError);
  EXPECT_THROW(checksum64(static_cast<ChecksumAlgorithm>(7), "a", 1), UserError);
}

TEST(Checksum, DescribeShardUsesTheAlgorithmAskedFor) {
  auto b = pattern(5000);
  const Tensor t{TensorSpec{"w", DType::kU8, {5000}}, b.data(), b.size(), MemoryKind::kHost};
  const auto xxh3 = describe_shard(0, std::span(&t, 1), 4096);  // the default: XXH3
  EXPECT_EQ(xxh3.checksum_algorithm, ChecksumAlgorithm::kXxh3_64);
  ASSERT_EQ(xxh3.checksums.at(0).size(), 2u);
  EXPECT_EQ(xxh3.checksums[0][0], kVectors[13].xxh3);
  const auto xxh64 = describe_shard(0, std::span(&t, 1), 4096, ChecksumAlgorithm::kXxh64);
  EXPECT_EQ(xxh64.checksums[0][0], kVectors[13].xxh64);
  EXPECT_EQ(xxh64.checksums[0][1], checksum64(ChecksumAlgorithm::kXxh64, b.data() + 4096, 904));
  const auto layout = describe_shard_layout(0, std::span(&t, 1), 4096);
  EXPECT_EQ(layout.checksums, (std::vector<std::vector<std::uint64_t>>{{0, 0}}));  // sized, not hashed
}

TEST(Checksum, ManifestsCarryTheirAlgorithm) {
  auto b = pattern(5000);
  const Tensor t{TensorSpec{"w", DType::kU8, {5000}}, b.data(), b.size(), MemoryKind::kHost};
  const Tensor u{TensorSpec{"u", DType::kU8, {100}}, b.data(), 100, MemoryKind::kHost};
  auto s0 = describe_shard(0, std::span(&t, 1), 4096, ChecksumAlgorithm::kXxh64);
  auto s1 = describe_shard(1, std::span(&u, 1), 4096, ChecksumAlgorithm::kXxh64);
  const auto old = assemble_manifest("m", 1, 4096, {s0, s1});
  EXPECT_EQ(old.checksum_algorithm, ChecksumAlgorithm::kXxh64);
  // Shards hashed with different algorithms do not make one version.
  s1 = describe_shard(1, std::span(&u, 1), 4096);
  try {
    assemble_manifest("m", 1, 4096, {s0, s1});
    FAIL() << "mixed algorithms accepted";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("shard 1 has xxh3_64 checksums, shard 0 xxh64"), std::string::npos)
        << e.what();
  }
  // The same bytes under the two algorithms: the layout compares equal, the sums cannot.
  s0 = describe_shard(0, std::span(&t, 1), 4096);
  const auto now = assemble_manifest("m", 1, 4096, {s0, s1});
  EXPECT_EQ(manifest_difference(now, now), "");
  const auto diff = manifest_difference(now, old, "the version", "the snapshot");
  EXPECT_EQ(diff, "the checksums cannot be compared: the version has xxh3_64 sums, the snapshot xxh64") << diff;
  // A layout difference is named first.
  auto other = old;
  other.chunk_bytes = 8192;
  EXPECT_NE(manifest_difference(now, other).find("chunk size"), std::string::npos);
}

// hash_shard on several threads fills the same sums as describe_shard; a set cancel flag stops it.
TEST(Checksum, HashShardOnThreadsEqualsDescribeShard) {
  auto a = pattern(100 * 4096 + 17);
  auto b = pattern(3 * 4096);
  const std::vector<Tensor> t{Tensor{TensorSpec{"a", DType::kU8, {100 * 4096 + 17}}, a.data(), a.size()},
                              Tensor{TensorSpec{"b", DType::kU8, {3 * 4096}}, b.data(), b.size()}};
  const auto want = describe_shard(0, t, 4096);
  for (const unsigned threads : {0u, 1u, 3u, 64u}) {
    auto s = describe_shard_layout(0, t, 4096);
    ASSERT_TRUE(hash_shard(s, t, 4096, threads));
    EXPECT_EQ(s, want) << threads << " threads";
  }
  auto old = describe_shard_layout(0, t, 4096, ChecksumAlgorithm::kXxh64);
  ASSERT_TRUE(hash_shard(old, t, 4096, 2));
  EXPECT_EQ(old, describe_shard(0, t, 4096, ChecksumAlgorithm::kXxh64));
  std::atomic<bool> cancel{true};
  auto stopped = describe_shard_layout(0, t, 4096);
  EXPECT_FALSE(hash_shard(stopped, t, 4096, 2, &cancel));
  EXPECT_GE(default_hash_threads(), 1u);
  EXPECT_LE(default_hash_threads(), 4u);
  EXPECT_LE(default_hash_threads(), usable_cpus());
}

// Bytes fed in pieces hash like the same bytes back to back (a chunk that landed scattered),
// for both algorithms and pieces of every size (XXH3's internal blocks are 64 bytes and 1 KiB).
TEST(Checksum, AStreamOfPiecesEqualsTheWholeRange) {
  const auto data = pattern(3 * 4096 + 77);
  for (const auto a : {ChecksumAlgorithm::kXxh3_64, ChecksumAlgorithm::kXxh64}) {
    const auto whole = checksum64(a, data.data(), data.size());
    for (const std::size_t piece :
         {std::size_t{1}, std::size_t{63}, std::size_t{240}, std::size_t{1000}, std::size_t{4096}, data.size()}) {
      ChecksumStream s(a);
      for (std::size_t at = 0; at < data.size(); at += piece)
        s.update(data.data() + at, std::min(piece, data.size() - at));
      EXPECT_EQ(s.digest(), whole) << checksum_algorithm_name(a) << " in pieces of " << piece;
    }
    ChecksumStream empty(a);
    EXPECT_EQ(empty.digest(), checksum64(a, data.data(), 0));
    ChecksumStream other(a);
    other.update(data.data() + 1, data.size() - 1);
    EXPECT_NE(other.digest(), whole);
  }
}

}  // namespace
}  // namespace tensorhub
