// lib/core manifest.hpp: chunk_count edge cases; describe_shard (per-chunk checksums equal to
// checksum64 (XXH3) of each chunk, and every rejection: zero-size, empty or duplicate names, short
// buffers, null data, device memory, bad chunk sizes); validate_shard; assemble_manifest
// (global chunk numbering, shard order, duplicate tensors across shards, missing shards) and
// Manifest::find / total_bytes.
#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include "tensorhub/core/checksum.hpp"
#include "tensorhub/core/error.hpp"
#include "tensorhub/core/manifest.hpp"

namespace tensorhub {
namespace {

constexpr std::uint64_t kChunk = 4096;

// A host buffer filled with a byte pattern that differs per offset and per seed.
std::vector<unsigned char> pattern(std::size_t bytes, unsigned seed) {
  std::vector<unsigned char> v(bytes);
  for (std::size_t i = 0; i < bytes; ++i) v[i] = static_cast<unsigned char>((i * 31 + seed * 7 + i / 251) & 0xff);
  return v;
}

// Expects `fn` to throw UserError whose message contains `needle`.
template <class Fn>
void expect_user_error_mentioning(Fn&& fn, const std::string& needle) {
  try {
    fn();
    ADD_FAILURE() << "expected UserError mentioning '" << needle << "'";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

// A ShardManifest built by hand (no memory): checksums are arbitrary but distinct.
ShardManifest fake_shard(std::uint32_t shard, std::vector<TensorSpec> specs, std::uint64_t chunk_bytes = kChunk) {
  ShardManifest s;
  s.shard = shard;
  std::uint64_t next = 1000 * (shard + 1);
  for (auto& spec : specs) {
    std::vector<std::uint64_t> sums(chunk_count(spec.bytes(), chunk_bytes));
    for (auto& x : sums) x = next++;
    s.checksums.push_back(std::move(sums));
    s.tensors.push_back(std::move(spec));
  }
  return s;
}

// ---- chunk_count -----------------------------------------------------------------------------

TEST(ChunkCount, EdgeCases) {
  EXPECT_EQ(chunk_count(0, kChunk), 0u);
  EXPECT_EQ(chunk_count(1, kChunk), 1u);
  EXPECT_EQ(chunk_count(kChunk - 1, kChunk), 1u);
  EXPECT_EQ(chunk_count(kChunk, kChunk), 1u);
  EXPECT_EQ(chunk_count(kChunk + 1, kChunk), 2u);
  EXPECT_EQ(chunk_count(2 * kChunk, kChunk), 2u);
  EXPECT_EQ(chunk_count(10, 1), 10u);
  EXPECT_EQ(chunk_count(5ull << 30, 1ull << 30), 5u);
}

TEST(ChunkCount, ZeroChunkSizeIsAContractViolation) { EXPECT_THROW(chunk_count(10, 0), ContractViolation); }

// ---- describe_shard --------------------------------------------------------------------------

TEST(DescribeShard, ChecksumsAreChecksum64OfEachChunk) {
  // 3 chunks, the last one short: 2*4096 + 100 bytes.
  auto a = pattern(2 * kChunk + 100, 1);
  // Exactly one chunk.
  auto b = pattern(kChunk, 2);
  const std::vector<Tensor> tensors{host_tensor("a", DType::kU8, {static_cast<std::int64_t>(a.size())}, a.data()),
                                    host_tensor("b", DType::kF32, {16, 64}, b.data())};
  const ShardManifest s = describe_shard(3, tensors, kChunk);

  EXPECT_EQ(s.shard, 3u);
  ASSERT_EQ(s.tensors.size(), 2u);
  EXPECT_EQ(s.tensors[0], tensors[0].spec);
  EXPECT_EQ(s.tensors[1], tensors[1].spec);
  ASSERT_EQ(s.checksums.size(), 2u);
  ASSERT_EQ(s.checksums[0].size(), 3u);
  EXPECT_EQ(s.checksums[0][0], checksum64(ChecksumAlgorithm::kXxh3_64, a.data(), kChunk));
  EXPECT_EQ(s.checksums[0][1], checksum64(ChecksumAlgorithm::kXxh3_64, a.data() + kChunk, kChunk));
  EXPECT_EQ(s.checksums[0][2], checksum64(ChecksumAlgorithm::kXxh3_64, a.data() + 2 * kChunk, 100));
  ASSERT_EQ(s.checksums[1].size(), 1u);
  EXPECT_EQ(s.checksums[1][0], checksum64(ChecksumAlgorithm::kXxh3_64, b.data(), kChunk));
  // The pattern differs per chunk, so equal checksums would mean the wrong range was hashed.
  EXPECT_NE(s.checksums[0][0], s.checksums[0][1]);
  // The result passes the wire-side validation.
  EXPECT_NO_THROW(validate_shard(s, kChunk));
}

TEST(DescribeShard, OnlyTheSpecBytesOfALargerBufferAreHashed) {
  auto buf = pattern(kChunk + 64, 5);
  Tensor t = host_tensor("w", DType::kU8, {100}, buf.data());
  t.bytes = buf.size();  // larger buffer than the tensor needs: allowed
  const std::vector<Tensor> tensors{t};
  const auto s = describe_shard(0, tensors, kChunk);
  ASSERT_EQ(s.checksums.size(), 1u);
  ASSERT_EQ(s.checksums[0].size(), 1u);
  EXPECT_EQ(s.checksums[0][0], checksum64(ChecksumAlgorithm::kXxh3_64, buf.data(), 100));
}

TEST(DescribeShard, ChecksumsChangeWhenAByteChanges) {
  auto buf = pattern(2 * kChunk, 9);
  const std::vector<Tensor> tensors{host_tensor("w", DType::kU8, {2 * static_cast<std::int64_t>(kChunk)}, buf.data())};
  const auto before = describe_shard(0, tensors, kChunk);
  buf[kChunk + 17] ^= 0x01;
  const auto after = describe_shard(0, tensors, kChunk);
  EXPECT_EQ(before.checksums[0][0], after.checksums[0][0]);
  EXPECT_NE(before.checksums[0][1], after.checksums[0][1]);
}

TEST(DescribeShard, ChunkSizeBoundsAreInclusive) {
  auto buf = pattern(10000, 3);
  const std::vector<Tensor> tensors{host_tensor("w", DType::kU8, {10000}, buf.data())};
  EXPECT_EQ(describe_shard(0, tensors, 4096).checksums[0].size(), 3u);
  EXPECT_EQ(describe_shard(0, tensors, 1ull << 30).checksums[0].size(), 1u);
}

TEST(DescribeShard, RejectsBadChunkSizes) {
  auto buf = pattern(64, 3);
  const std::vector<Tensor> tensors{host_tensor("w", DType::kU8, {64}, buf.data())};
  const std::uint64_t bad_sizes[] = {0, 1, 4095, (1ull << 30) + 1, 1ull << 40};
  for (const std::uint64_t bad : bad_sizes) {
    EXPECT_THROW(describe_shard(0, tensors, bad), UserError) << "chunk size " << bad;
  }
}

TEST(DescribeShard, RejectsAnEmptyShard) { EXPECT_THROW(describe_shard(0, std::vector<Tensor>{}, kChunk), UserError); }

TEST(DescribeShard, RejectsZeroSizeTensors) {
  auto buf = pattern(64, 3);
  const std::vector<Tensor> tensors{host_tensor("ok", DType::kU8, {64}, buf.data()),
                                    host_tensor("empty", DType::kF32, {0, 4}, buf.data())};
  expect_user_error_mentioning([&] { describe_shard(0, tensors, kChunk); }, "'empty'");
}

TEST(DescribeShard, RejectsEmptyNames) {
  auto buf = pattern(64, 3);
  const std::vector<Tensor> tensors{host_tensor("", DType::kU8, {64}, buf.data())};
  EXPECT_THROW(describe_shard(0, tensors, kChunk), UserError);
}

TEST(DescribeShard, RejectsDuplicateNames) {
  auto a = pattern(64, 1);
  auto b = pattern(64, 2);
  const std::vector<Tensor> tensors{host_tensor("w", DType::kU8, {64}, a.data()),
                                    host_tensor("w", DType::kU8, {64}, b.data())};
  expect_user_error_mentioning([&] { describe_shard(0, tensors, kChunk); }, "'w'");
}

TEST(DescribeShard, RejectsBuffersSmallerThanTheTensor) {
  auto buf = pattern(64, 3);
  Tensor t = host_tensor("short", DType::kF32, {16}, buf.data());  // 64 bytes needed
  t.bytes = 63;
  const std::vector<Tensor> tensors{t};
  expect_user_error_mentioning([&] { describe_shard(0, tensors, kChunk); }, "'short'");
}

TEST(DescribeShard, RejectsNullData) {
  const std::vector<Tensor> tensors{host_tensor("null", DType::kF32, {16}, nullptr)};
  expect_user_error_mentioning([&] { describe_shard(0, tensors, kChunk); }, "'null'");
}

TEST(DescribeShard, RejectsDeviceMemoryInThisBuild) {
  auto buf = pattern(64, 3);
  Tensor t = host_tensor("dev", DType::kU8, {64}, buf.data());
  t.memory = MemoryKind::kCuda;
  const std::vector<Tensor> tensors{t};
  expect_user_error_mentioning([&] { describe_shard(0, tensors, kChunk); }, "'dev'");
}

// The layout never touches the bytes, so device memory is fine there (the hub fills the
// checksums on the device).
TEST(DescribeShard, LayoutAcceptsDeviceMemory) {
  Tensor t = host_tensor("dev", DType::kU8, {64}, reinterpret_cast<void*>(std::uintptr_t{0x1000}));
  t.memory = MemoryKind::kCuda;
  const auto shard = describe_shard_layout(0, {&t, 1}, kChunk);
  ASSERT_EQ(shard.checksums.size(), 1u);
  EXPECT_EQ(shard.checksums[0].size(), 1u);
}

// ---- validate_shard --------------------------------------------------------------------------

TEST(ValidateShard, AcceptsAWellFormedShard) {
  EXPECT_NO_THROW(validate_shard(fake_shard(0, {{"a", DType::kF32, {3000}}, {"b", DType::kU8, {1}}}), kChunk));
}

TEST(ValidateShard, RejectsWrongChecksumCounts) {
  auto s = fake_shard(0, {{"a", DType::kF32, {3000}}});  // 12000 bytes: 3 chunks
  s.checksums[0].pop_back();
  expect_user_error_mentioning([&] { validate_shard(s, kChunk); }, "'a'");
  s.checksums[0].push_back(1);
  s.checksums[0].push_back(2);
  EXPECT_THROW(validate_shard(s, kChunk), UserError);
}

TEST(ValidateShard, RejectsChecksumListOfTheWrongLength) {
  auto s = fake_shard(0, {{"a", DType::kF32, {10}}});
  s.checksums.push_back({1});
  EXPECT_THROW(validate_shard(s, kChunk), UserError);
}

TEST(ValidateShard, RejectsEmptyZeroSizeAndDuplicateTensors) {
  ShardManifest empty;
  EXPECT_THROW(validate_shard(empty, kChunk), UserError);

  auto zero = fake_shard(0, {{"a", DType::kF32, {10}}});
  zero.tensors.push_back({"z", DType::kF32, {0}});
  zero.checksums.push_back({});
  EXPECT_THROW(validate_shard(zero, kChunk), UserError);

  auto dup = fake_shard(0, {{"a", DType::kF32, {10}}, {"a", DType::kF32, {10}}});
  EXPECT_THROW(validate_shard(dup, kChunk), UserError);
}

TEST(ValidateShard, RejectsBadChunkSize) {
  EXPECT_THROW(validate_shard(fake_shard(0, {{"a", DType::kU8, {10}}}, 1024), 1024), UserError);
}

// ---- assemble_manifest -----------------------------------------------------------------------

TEST(AssembleManifest, NumbersChunksGloballyInShardOrder) {
  // Shard 0: "a" (3 chunks), "b" (1 chunk). Shard 1: "c" (2 chunks). Passed in reverse order.
  auto s0 = fake_shard(0, {{"a", DType::kF32, {2 * 1024 + 10}}, {"b", DType::kU8, {7}}});
  auto s1 = fake_shard(1, {{"c", DType::kI64, {1024}}});
  const Manifest m = assemble_manifest("llama", 42, kChunk, {s1, s0});

  EXPECT_EQ(m.model, "llama");
  EXPECT_EQ(m.version, 42u);
  EXPECT_EQ(m.chunk_bytes, kChunk);
  EXPECT_EQ(m.num_shards, 2u);
  ASSERT_EQ(m.tensors.size(), 3u);
  ASSERT_EQ(m.chunks.size(), 6u);

  EXPECT_EQ(m.tensors[0].spec.name, "a");
  EXPECT_EQ(m.tensors[0].shard, 0u);
  EXPECT_EQ(m.tensors[0].first_chunk, 0u);
  EXPECT_EQ(m.tensors[0].num_chunks, 3u);
  EXPECT_EQ(m.tensors[1].spec.name, "b");
  EXPECT_EQ(m.tensors[1].shard, 0u);
  EXPECT_EQ(m.tensors[1].first_chunk, 3u);
  EXPECT_EQ(m.tensors[1].num_chunks, 1u);
  EXPECT_EQ(m.tensors[2].spec.name, "c");
  EXPECT_EQ(m.tensors[2].shard, 1u);
  EXPECT_EQ(m.tensors[2].first_chunk, 4u);
  EXPECT_EQ(m.tensors[2].num_chunks, 2u);

  // Tensor "a": 8232 bytes -> 4096, 4096, 40.
  EXPECT_EQ(m.chunks[0], (ChunkSpec{0, 0, 4096, s0.checksums[0][0]}));
  EXPECT_EQ(m.chunks[1], (ChunkSpec{0, 4096, 4096, s0.checksums[0][1]}));
  EXPECT_EQ(m.chunks[2], (ChunkSpec{0, 8192, 40, s0.checksums[0][2]}));
  EXPECT_EQ(m.chunks[3], (ChunkSpec{1, 0, 7, s0.checksums[1][0]}));
  // Tensor "c": 8192 bytes -> exactly 2 full chunks.
  EXPECT_EQ(m.chunks[4], (ChunkSpec{2, 0, 4096, s1.checksums[0][0]}));
  EXPECT_EQ(m.chunks[5], (ChunkSpec{2, 4096, 4096, s1.checksums[0][1]}));
}

TEST(AssembleManifest, ChunksCoverEveryTensorExactly) {
  auto s0 = fake_shard(0, {{"x", DType::kBF16, {3, 5000}}, {"y", DType::kF64, {512}}});
  auto s1 = fake_shard(1, {{"z", DType::kU8, {1}}});
  auto s2 = fake_shard(2, {{"w", DType::kF32, {4096}}});
  const Manifest m = assemble_manifest("m", 1, kChunk, {s2, s0, s1});
  for (std::uint32_t t = 0; t < m.tensors.size(); ++t) {
    const auto& e = m.tensors[t];
    std::uint64_t covered = 0;
    for (std::uint32_t c = e.first_chunk; c < e.first_chunk + e.num_chunks; ++c) {
      EXPECT_EQ(m.chunks[c].tensor, t);
      EXPECT_EQ(m.chunks[c].offset, covered);
      EXPECT_GT(m.chunks[c].length, 0u);
      EXPECT_LE(m.chunks[c].length, kChunk);
      covered += m.chunks[c].length;
    }
    EXPECT_EQ(covered, e.spec.bytes()) << e.spec.name;
  }
  EXPECT_EQ(m.tensors.back().first_chunk + m.tensors.back().num_chunks, m.chunks.size());
  EXPECT_EQ(m.tensors[2].spec.name, "z");
  EXPECT_EQ(m.tensors[3].spec.name, "w");
}

TEST(AssembleManifest, FindAndTotalBytes) {
  const Manifest m = assemble_manifest(
      "m", 1, kChunk, {fake_shard(0, {{"a", DType::kF32, {10}}}), fake_shard(1, {{"b", DType::kU8, {5000}}})});
  EXPECT_EQ(m.find("a"), std::optional<std::uint32_t>(0));
  EXPECT_EQ(m.find("b"), std::optional<std::uint32_t>(1));
  EXPECT_EQ(m.find("c"), std::nullopt);
  EXPECT_EQ(m.find(""), std::nullopt);
  EXPECT_EQ(m.total_bytes(), 40u + 5000u);
}

TEST(AssembleManifest, RejectsATensorPublishedByTwoShards) {
  auto s0 = fake_shard(0, {{"a", DType::kF32, {10}}, {"shared", DType::kF32, {10}}});
  auto s1 = fake_shard(1, {{"shared", DType::kF32, {10}}});
  expect_user_error_mentioning([&] { assemble_manifest("m", 1, kChunk, {s0, s1}); }, "'shared'");
}

TEST(AssembleManifest, RejectsMissingShards) {
  auto s0 = fake_shard(0, {{"a", DType::kF32, {10}}});
  auto s2 = fake_shard(2, {{"c", DType::kF32, {10}}});
  EXPECT_THROW(assemble_manifest("m", 1, kChunk, {s0, s2}), UserError);
  EXPECT_THROW(assemble_manifest("m", 1, kChunk, {s2}), UserError);
  // The same shard twice leaves another one missing.
  EXPECT_THROW(assemble_manifest("m", 1, kChunk, {s0, s0}), UserError);
}

TEST(AssembleManifest, ValidatesEachShard) {
  auto s0 = fake_shard(0, {{"a", DType::kF32, {2000}}});
  s0.checksums[0].push_back(7);  // one checksum too many
  EXPECT_THROW(assemble_manifest("m", 1, kChunk, {s0}), UserError);
}

}  // namespace
}  // namespace tensorhub
