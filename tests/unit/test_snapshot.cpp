// lib/snapshot, serial: write -> inspect -> read -> verify round trips for every dtype, scalar
// and multi-dimensional shapes, tensor names with '.', '/', '%'; chunk sizes that split
// elements; tensors spanning many I/O pieces; progress reports; reading a subset; refusal to
// overwrite; rejected inputs of write (no file, no .tmp left behind); checksum attributes larger
// than 64 KiB. No MPI_Init: the serial API must not need it.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "../snapshot/snapshot_test_util.hpp"
#include "tensorhub/core/error.hpp"
#include "tensorhub/snapshot/snapshot.hpp"
#include "write_options.hpp"

namespace tensorhub::snapshot {
namespace {

using testing::empty_like;
using testing::make_tensor;
using testing::manifest_of;
using testing::OwnedTensor;
using testing::TempDir;
using testing::views;

constexpr std::uint64_t kChunk = 4096;

std::vector<OwnedTensor> every_dtype() {
  std::vector<OwnedTensor> t;
  t.push_back(make_tensor("layers.0.q_proj", DType::kF32, {33, 65}, 1));  // 2 chunks + a bit
  t.push_back(make_tensor("model/embed.weight", DType::kBF16, {40, 70}, 2));
  t.push_back(make_tensor("half", DType::kF16, {2, 3, 5}, 3));
  t.push_back(make_tensor("f64 100%", DType::kF64, {1001}, 4));
  t.push_back(make_tensor("i8", DType::kI8, {7, 1, 3}, 5));
  t.push_back(make_tensor("u8", DType::kU8, {4097}, 6));
  t.push_back(make_tensor("i16", DType::kI16, {9, 9}, 7));
  t.push_back(make_tensor("i32", DType::kI32, {1, 1, 1, 1, 1025}, 8));
  t.push_back(make_tensor("i64", DType::kI64, {3, 200}, 9));
  t.push_back(make_tensor("mask", DType::kBool, {17}, 10));
  t.push_back(make_tensor("scale", DType::kF32, {}, 11));  // scalar
  t.push_back(make_tensor(".", DType::kU8, {3}, 12));
  return t;
}

void expect_same_bytes(const Tensor& a, const Tensor& b) {
  ASSERT_EQ(a.spec, b.spec);
  EXPECT_EQ(std::memcmp(a.data, b.data, a.spec.bytes()), 0) << "tensor " << a.spec.name;
}

TEST(Snapshot, RoundTripEveryDtype) {
  TempDir dir;
  const auto owned = every_dtype();
  const auto tensors = views(owned);
  const Manifest m = manifest_of("policy", 42, kChunk, {tensors});
  const std::string path = dir.file("v42.h5");
  write(path, m, tensors);
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));

  const SnapshotInfo info = inspect(path);
  EXPECT_EQ(info.path, path);
  EXPECT_EQ(info.format_version, kFormatVersion);
  EXPECT_EQ(info.manifest, m);
  EXPECT_EQ(info.created_by.rfind("tensorhub ", 0), 0u) << info.created_by;
  EXPECT_EQ(info.created_at.size(), 20u) << info.created_at;  // 2025-01-31T12:34:56Z
  EXPECT_GT(info.file_bytes, m.total_bytes());

  std::vector<OwnedTensor> back;
  for (const auto& t : tensors) back.push_back(empty_like(t));
  read(path, views(back));
  for (std::size_t i = 0; i < tensors.size(); ++i) expect_same_bytes(tensors[i], back[i].tensor);

  const VerifyReport report = verify(path);
  EXPECT_TRUE(report.ok());
  EXPECT_EQ(report.chunks, m.chunks.size());
  EXPECT_EQ(report.bytes, m.total_bytes());
}

// Chunk size not a multiple of the element size (4100 = 512.5 f64): chunk boundaries fall inside
// elements; tiny I/O pieces make every tensor span many pieces. Progress: once per chunk.
TEST(Snapshot, ChunksSplittingElementsAndManyPieces) {
  TempDir dir;
  constexpr std::uint64_t kOddChunk = 4100;
  std::vector<OwnedTensor> owned;
  owned.push_back(make_tensor("w", DType::kF64, {37, 11, 3}, 1));
  owned.push_back(make_tensor("v", DType::kBF16, {3, 4099}, 2));
  owned.push_back(make_tensor("b", DType::kI32, {5000}, 3));
  const auto tensors = views(owned);
  const Manifest m = manifest_of("m", 1, kOddChunk, {tensors});
  const std::string path = dir.file("odd.h5");

  std::vector<std::uint64_t> seen;
  std::uint64_t last_total = 0;
  detail::write_serial(
      path, m, tensors, false,
      [&](std::uint64_t done, std::uint64_t total) {
        seen.push_back(done);
        last_total = total;
      },
      3 * kOddChunk);
  ASSERT_EQ(seen.size(), m.chunks.size());
  EXPECT_EQ(seen.back(), m.total_bytes());
  EXPECT_EQ(last_total, m.total_bytes());
  for (std::size_t i = 1; i < seen.size(); ++i) EXPECT_GT(seen[i], seen[i - 1]);

  std::vector<OwnedTensor> back;
  for (const auto& t : tensors) back.push_back(empty_like(t));
  std::uint64_t read_calls = 0;
  read(path, views(back), true, [&](std::uint64_t, std::uint64_t) { ++read_calls; });
  EXPECT_EQ(read_calls, m.chunks.size());
  for (std::size_t i = 0; i < tensors.size(); ++i) expect_same_bytes(tensors[i], back[i].tensor);
  EXPECT_TRUE(verify(path).ok());
}

TEST(Snapshot, ReadsASubset) {
  TempDir dir;
  const auto owned = every_dtype();
  const auto tensors = views(owned);
  const std::string path = dir.file("s.h5");
  write(path, manifest_of("policy", 1, kChunk, {tensors}), tensors);
  auto one = empty_like(tensors[1]);
  std::vector<Tensor> into{one.tensor};
  read(path, into);
  expect_same_bytes(tensors[1], one.tensor);
}

// A version of boxes of a global tensor: written from buffers that name the boxes without their
// layout (a relay's pull buffers), the file keeps the layout, reads fill plain buffers.
TEST(Snapshot, BoxesOfAGlobalTensorKeepTheirLayout) {
  TempDir dir;
  std::vector<OwnedTensor> owned;
  owned.push_back(make_tensor("w.tp0", DType::kBF16, {3, 70}, 1));
  owned.push_back(make_tensor("w.tp1", DType::kBF16, {2, 70}, 2));
  auto boxed = views(owned);
  for (std::int64_t i = 0; i < 2; ++i) {
    boxed[i].spec.global_name = "w";
    boxed[i].spec.global_shape = {5, 70};
    boxed[i].spec.box_offset = {3 * i, 0};
  }
  const auto m = manifest_of("policy", 1, kChunk, {boxed});
  const std::string path = dir.file("boxes.h5");
  write(path, m, views(owned));  // plain specs: the manifest has the layout
  const auto info = inspect(path);
  EXPECT_EQ(info.manifest, m);
  EXPECT_EQ(describe(info.manifest.tensors[1].spec), "bf16[2,70] of w[5,70] at [3,0]");
  auto back = empty_like(views(owned)[1]);
  std::vector<Tensor> into{back.tensor};
  read(path, into);
  expect_same_bytes(views(owned)[1], back.tensor);
}

TEST(Snapshot, RefusesToOverwriteUnlessAsked) {
  TempDir dir;
  const auto owned = every_dtype();
  const auto tensors = views(owned);
  const Manifest m = manifest_of("policy", 1, kChunk, {tensors});
  const std::string path = dir.file("o.h5");
  write(path, m, tensors);
  try {
    write(path, m, tensors);
    FAIL() << "second write succeeded";
  } catch (const SnapshotError& e) {
    EXPECT_NE(std::string(e.what()).find("overwrite"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
  const Manifest m2 = manifest_of("policy", 2, kChunk, {tensors});
  write(path, m2, tensors, /*overwrite=*/true);
  EXPECT_EQ(inspect(path).manifest.version, 2u);
}

template <class Error, class Fn>
void expect_error(Fn&& fn, const std::vector<std::string>& needles) {
  try {
    fn();
    ADD_FAILURE() << "no exception";
  } catch (const Error& e) {
    for (const auto& n : needles) EXPECT_NE(std::string(e.what()).find(n), std::string::npos) << e.what();
  }
}

TEST(Snapshot, WriteRejectsBadInputAndLeavesNothing) {
  TempDir dir;
  auto owned = every_dtype();
  auto tensors = views(owned);
  const Manifest m = manifest_of("policy", 1, kChunk, {tensors});
  const std::string path = dir.file("bad.h5");

  auto fewer = tensors;
  fewer.pop_back();
  expect_error<SnapshotError>([&] { write(path, m, fewer); }, {path, "'.'", "not among"});

  const auto extra = make_tensor("stranger", DType::kF32, {2}, 1);
  auto stranger = tensors;
  stranger.push_back(extra.tensor);
  expect_error<SnapshotError>([&] { write(path, m, stranger); }, {"stranger", "not in the manifest"});

  auto reshaped = tensors;
  reshaped[0].spec.shape = {65, 33};
  expect_error<SnapshotError>([&] { write(path, m, reshaped); }, {"layers.0.q_proj", "f32[65,33]", "f32[33,65]"});

  auto twice = tensors;
  twice.push_back(tensors[0]);
  expect_error<SnapshotError>([&] { write(path, m, twice); }, {"passed twice"});

  Manifest broken = m;
  broken.chunks[3].length += 1;
  expect_error<SnapshotError>([&] { write(path, broken, tensors); }, {"not consistent"});

  owned[0].bytes[5000] ^= 0x40;  // changed after the manifest was computed: chunk 1 of tensor 0
  expect_error<ChecksumError>([&] { write(path, m, tensors); }, {"layers.0.q_proj", "chunk 1"});

  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
}

// 9216 chunks -> a 72 KiB checksum attribute: needs HDF5's dense attribute storage.
TEST(Snapshot, ChecksumAttributeLargerThan64KiB) {
  TempDir dir;
  std::vector<OwnedTensor> owned;
  owned.push_back(make_tensor("big", DType::kU8, {9216 * 4096}, 1));
  const auto tensors = views(owned);
  const Manifest m = manifest_of("policy", 1, kChunk, {tensors});
  const std::string path = dir.file("big.h5");
  write(path, m, tensors);
  EXPECT_EQ(inspect(path).manifest, m);
  EXPECT_TRUE(verify(path).ok());
}

}  // namespace
}  // namespace tensorhub::snapshot
