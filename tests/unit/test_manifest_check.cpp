// lib/core manifest.hpp: validate_manifest (every structural rejection, naming manifest and
// tensor) and manifest_difference ("" for the same bytes whatever the shard layout and tensor
// order; the first difference otherwise, in the caller's words); and Bug 7: shapes whose element
// count or byte size overflows 64 bits are refused (TensorSpec, describe_shard, validate_shard,
// the manifest JSON decoder) with UserError naming the tensor; config.hpp's TENSORHUB_HAVE_CUDA
// says what describe_shard accepts.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "tensorhub/config.hpp"
#include "tensorhub/core/error.hpp"
#include "tensorhub/core/limits.hpp"
#include "tensorhub/core/log.hpp"
#include "tensorhub/core/manifest.hpp"
#include "tensorhub/core/manifest_json.hpp"

namespace tensorhub {
namespace {

constexpr std::uint64_t kChunk = 4096;

template <class Fn>
void expect_user_error_mentioning(Fn&& fn, const std::string& needle) {
  try {
    fn();
    ADD_FAILURE() << "expected UserError mentioning '" << needle << "'";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

ShardManifest shard_of(std::uint32_t shard, std::vector<TensorSpec> specs, std::uint64_t first_sum = 1,
                       std::uint64_t chunk_bytes = kChunk) {
  ShardManifest s;
  s.shard = shard;
  for (auto& spec : specs) {
    std::vector<std::uint64_t> sums(chunk_count(spec.bytes(), chunk_bytes));
    for (auto& x : sums) x = first_sum++;
    s.checksums.push_back(std::move(sums));
    s.tensors.push_back(std::move(spec));
  }
  return s;
}

const TensorSpec kA{"a", DType::kF32, {3000}};  // 12000 bytes: 3 chunks
const TensorSpec kB{"b", DType::kU8, {100}};
const TensorSpec kC{"c", DType::kBF16, {4096, 2}};  // 4 chunks

// a, b in shard 0 and c in shard 1; checksums 1.. in that order.
Manifest two_shards() { return assemble_manifest("m", 3, kChunk, {shard_of(0, {kA, kB}, 1), shard_of(1, {kC}, 5)}); }

// The same bytes in one shard, tensor order c, a, b (checksums follow their tensors).
Manifest one_shard_reordered() {
  auto s = shard_of(0, {kC, kA, kB});
  s.checksums = {{5, 6, 7, 8}, {1, 2, 3}, {4}};
  return assemble_manifest("other-name", 9, kChunk, {s});
}

TEST(ValidateManifest, AcceptsAssembledManifests) {
  EXPECT_NO_THROW(validate_manifest(two_shards()));
  EXPECT_NO_THROW(validate_manifest(one_shard_reordered()));
}

TEST(ValidateManifest, RejectsEveryStructuralFault) {
  const auto good = two_shards();
  auto m = good;
  m.model.clear();
  expect_user_error_mentioning([&] { validate_manifest(m); }, "model name is empty");
  m = good;
  m.model = "bad\xff";
  expect_user_error_mentioning([&] { validate_manifest(m); }, "not valid UTF-8");
  m = good;
  m.tensors[0].spec.name = "t\x01";
  expect_user_error_mentioning([&] { validate_manifest(m); }, "control character");
  m = good;
  m.chunk_bytes = 0;
  expect_user_error_mentioning([&] { validate_manifest(m); }, "manifest of 'm' v3: chunk size");
  m = good;
  m.num_shards = 0;
  expect_user_error_mentioning([&] { validate_manifest(m); }, "zero shards");
  m = good;
  m.tensors.clear();
  m.chunks.clear();
  expect_user_error_mentioning([&] { validate_manifest(m); }, "no tensors");
  m = good;
  m.tensors[1].spec.name = "a";
  expect_user_error_mentioning([&] { validate_manifest(m); }, "tensor 'a' appears twice");
  m = good;
  m.tensors[2].shard = 2;
  expect_user_error_mentioning([&] { validate_manifest(m); }, "tensor 'c' names a shard out of range");
  m = good;
  m.tensors[1].first_chunk = 2;
  expect_user_error_mentioning([&] { validate_manifest(m); }, "tensor 'b' has a bad chunk range");
  m = good;
  m.chunks[1].offset = 1;
  expect_user_error_mentioning([&] { validate_manifest(m); }, "tensor 'a' chunk 1 is malformed");
  m = good;
  m.chunks.pop_back();
  expect_user_error_mentioning([&] { validate_manifest(m); }, "tensor 'c' chunk range exceeds the list");
  m = good;
  m.chunks.push_back(m.chunks.back());
  expect_user_error_mentioning([&] { validate_manifest(m); }, "chunks that belong to no tensor");
  m = good;
  m.tensors[0].spec.shape = {0};
  expect_user_error_mentioning([&] { validate_manifest(m); }, "tensor 'a' f32[0] has zero bytes");
}

TEST(ValidateManifest, RejectsAShapeWhoseSizeOverflows) {
  auto m = two_shards();
  m.tensors[1].spec.shape = {(1ll << 61) + 1, 8};  // u8: 2^64 + 8 bytes, 8 after wrapping
  expect_user_error_mentioning([&] { validate_manifest(m); }, "tensor 'b' u8[2305843009213693953,8]");
}

// Issue 16, limits (tensorhub/core/limits.hpp): each refused with a UserError that says which.
TEST(ValidateManifest, RejectsWhatExceedsTheLimits) {
  auto m = two_shards();
  m.tensors[1].spec.shape = std::vector<std::int64_t>(limits::kMaxDims + 1, 1);
  expect_user_error_mentioning([&] { validate_manifest(m); }, "33 dimensions (at most 32)");
  // A 2 TiB tensor: its size fits 64 bits but is over the per-tensor limit.
  const std::vector<Tensor> big{host_tensor("big", DType::kU8, {std::int64_t{1} << 41}, &m)};
  expect_user_error_mentioning([&] { describe_shard(0, big, 1ull << 30); }, "per tensor");
  // 2^19 + 1 chunks in one shard.
  expect_user_error_mentioning(
      [&] {
        validate_shard(shard_of(0, {TensorSpec{"x", DType::kU8, {(std::int64_t{1} << 31) + 1}}}), kChunk);
      },
      "chunks in one version");
}

TEST(LogLine, IsCutAtTheLimitAndKeepsToOneLine) {
  const std::string big(1 << 20, 'x');
  const auto line = log_line_text(big);
  EXPECT_LT(line.size(), limits::kMaxLogLineBytes + 64);
  EXPECT_NE(line.find("more bytes cut"), std::string::npos);
  EXPECT_EQ(log_line_text("a\nb\x1b[2J"), "a b [2J");
}

TEST(ManifestDifference, SameBytesInAnotherLayoutAreTheSame) {
  EXPECT_EQ(manifest_difference(two_shards(), one_shard_reordered()), "");
  EXPECT_EQ(manifest_difference(one_shard_reordered(), two_shards()), "");
  EXPECT_EQ(manifest_difference(two_shards(), two_shards()), "");
}

TEST(ManifestDifference, NamesTheFirstDifferenceInTheCallersWords) {
  const auto a = two_shards();
  auto b = one_shard_reordered();
  b.chunks[5].checksum = 0xff;  // tensor a, chunk 1
  EXPECT_EQ(manifest_difference(a, b, "the version", "the snapshot"),
            "tensor 'a' chunk 1: checksum 0x0000000000000002 in the version, 0x00000000000000ff in the snapshot");
  EXPECT_EQ(manifest_difference(a, assemble_manifest("m", 3, kChunk, {shard_of(0, {kA, kB})}), "x", "y"),
            "x has 3 tensors, y 2");
  EXPECT_EQ(manifest_difference(a, assemble_manifest("m", 3, kChunk * 2, {shard_of(0, {kA, kB, kC}, 1, kChunk * 2)})),
            "chunk size 4096 in the first manifest, 8192 in the second manifest");
  const TensorSpec renamed{"d", DType::kBF16, {4096, 2}};
  EXPECT_EQ(manifest_difference(a, assemble_manifest("m", 3, kChunk, {shard_of(0, {kA, kB, renamed})}), "x", "y"),
            "tensor 'c' is missing from y");
  const TensorSpec reshaped{"c", DType::kBF16, {2, 4096}};
  EXPECT_EQ(manifest_difference(a, assemble_manifest("m", 3, kChunk, {shard_of(0, {kA, kB, reshaped})}), "x", "y"),
            "tensor 'c' is bf16[4096,2] in x but bf16[2,4096] in y");
}

TEST(ManifestDifference, NeverReadsOutsideAMalformedManifest) {
  auto b = two_shards();
  b.chunks.resize(2);
  EXPECT_NE(manifest_difference(two_shards(), b), "");
}

// Bug 7: u8[2^61+1, 8] is 2^64 + 8 bytes; it used to wrap to 8 and publish as 8 bytes.
const std::vector<std::int64_t> kWrapsTo8{(1ll << 61) + 1, 8};

TEST(ShapeOverflow, TensorSpecRefusesAByteSizeBeyond64Bits) {
  const TensorSpec s{"huge", DType::kU8, kWrapsTo8};
  expect_user_error_mentioning([&] { (void)s.bytes(); }, "tensor 'huge' u8[2305843009213693953,8]");
  const TensorSpec e{"elements", DType::kU8, {1ll << 62, 1ll << 62}};
  expect_user_error_mentioning([&] { (void)e.numel(); }, "tensor 'elements'");
  const TensorSpec f{"f64", DType::kF64, {1ll << 61}};  // 2^61 elements fit, 2^64 bytes do not
  EXPECT_EQ(f.numel(), 1ull << 61);
  expect_user_error_mentioning([&] { (void)f.bytes(); }, "tensor 'f64' f64[2305843009213693952]: its byte size");
  const TensorSpec zero{"zero", DType::kU8, {1ll << 62, 1ll << 62, 0}};
  EXPECT_EQ(zero.bytes(), 0u);
  const TensorSpec max{"max", DType::kU8, {-1}};
  EXPECT_THROW((void)max.bytes(), UserError);
}

TEST(ShapeOverflow, DescribeShardRefusesIt) {
  unsigned char buf[8] = {};
  Tensor t = host_tensor("w", DType::kU8, {2}, buf);
  t.spec.shape = kWrapsTo8;
  t.bytes = sizeof buf;
  expect_user_error_mentioning([&] { describe_shard(0, {&t, 1}, kChunk); }, "tensor 'w'");
}

TEST(ShapeOverflow, ValidateShardRefusesIt) {
  ShardManifest s;
  s.tensors = {TensorSpec{"w", DType::kU8, kWrapsTo8}};
  s.checksums = {{1}};  // one chunk: what 8 bytes would need
  expect_user_error_mentioning([&] { validate_shard(s, kChunk); }, "tensor 'w'");
}

TEST(ShapeOverflow, ManifestJsonDecoderRefusesIt) {
  const std::string json = R"({"format":1,"model":"m","version":1,"chunk_bytes":4096,"num_shards":1,"tensors":[)"
                           R"({"name":"w","dtype":"u8","shape":[2305843009213693953,8],"shard":0,"checksums":[1]}]})";
  expect_user_error_mentioning([&] { manifest_from_json(json); }, "tensor 'w'");
}

TEST(ShapeOverflow, MoreThan2To32ChunksIsRefused) {
  // 2^44 bytes in 4 KiB chunks: 2^32 chunks, one more than a chunk id can number.
  ShardManifest s;
  s.tensors = {TensorSpec{"w", DType::kU8, {1ll << 44}}};
  s.checksums = {{}};
  expect_user_error_mentioning([&] { validate_shard(s, kChunk); }, "tensor 'w' u8[17592186044416]");
}

// config.hpp must say what describe_shard does with CUDA memory (it said TENSORHUB_HAVE_CUDA 1
// wherever a CUDA toolkit was found, while CUDA memory was refused). Only fails before the fix
// on a machine with a CUDA toolkit.
TEST(BuildConfig, HaveCudaMatchesWhatDescribeShardAccepts) {
  unsigned char buf[16] = {};
  Tensor t = host_tensor("w", DType::kU8, {16}, buf);
  t.memory = MemoryKind::kCuda;
  bool accepted = true;
  try {
    describe_shard(0, {&t, 1}, kChunk);
  } catch (const UserError& e) {
    accepted = false;
    EXPECT_NE(std::string(e.what()).find("only host memory"), std::string::npos) << e.what();
  }
  EXPECT_EQ(accepted, TENSORHUB_HAVE_CUDA == 1);
}

}  // namespace
}  // namespace tensorhub
