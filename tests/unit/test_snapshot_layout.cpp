// lib/snapshot private pure logic: flat byte-range -> hyperslab decomposition (exhaustive over
// small shapes), the I/O piece plan (every chunk completed exactly once, every element covered),
// dataset name escaping, and the header codec's overflow guard.
#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include "header.hpp"
#include "layout.hpp"

namespace tensorhub::snapshot {
namespace {

// Flat indices of the elements a block covers, in row-major order.
void flatten(const std::vector<std::uint64_t>& dims, const layout::Block& b, std::vector<std::uint64_t>& out) {
  const std::size_t n = dims.size();
  std::vector<std::uint64_t> idx(n, 0);
  while (true) {
    std::uint64_t flat = 0;
    for (std::size_t i = 0; i < n; ++i) flat = flat * dims[i] + b.start[i] + idx[i];
    out.push_back(flat);
    std::size_t k = n;
    while (k > 0) {
      --k;
      if (++idx[k] < b.count[k]) break;
      idx[k] = 0;
      if (k == 0) return;
    }
  }
}

TEST(SnapshotLayout, FlatRangeBlocksCoverExactlyTheRangeInOrder) {
  const std::vector<std::vector<std::uint64_t>> shapes = {{1},    {6},       {3, 4},       {1, 7},
                                                          {7, 1}, {3, 4, 5}, {2, 1, 3, 2}, {2, 3, 1, 4, 2}};
  for (const auto& dims : shapes) {
    const std::uint64_t total = std::accumulate(dims.begin(), dims.end(), std::uint64_t{1}, std::multiplies<>());
    for (std::uint64_t first = 0; first < total; ++first) {
      for (std::uint64_t count = 1; first + count <= total; ++count) {
        const auto blocks = layout::flat_range_blocks(dims, first, count);
        ASSERT_LE(blocks.size(), 2 * dims.size() - 1);
        std::vector<std::uint64_t> got;
        for (const auto& b : blocks) {
          for (std::size_t i = 0; i < dims.size(); ++i) ASSERT_LE(b.start[i] + b.count[i], dims[i]);
          flatten(dims, b, got);
        }
        std::vector<std::uint64_t> want(count);
        std::iota(want.begin(), want.end(), first);
        ASSERT_EQ(got, want) << "dims rank " << dims.size() << " first " << first << " count " << count;
      }
    }
  }
}

TEST(SnapshotLayout, PiecePlanCompletesEveryChunkOnceAndCoversEveryElement) {
  struct Case {
    std::uint64_t bytes, elem, chunk, piece;
  };
  const std::vector<Case> cases = {{8, 8, 4096, 64},         {4096, 4, 4096, 4096},     {4100, 4, 4096, 4096},
                                   {80000, 8, 4100, 12300},  {80000, 8, 4100, 1},       {12288, 2, 4096, 1 << 20},
                                   {1 << 20, 1, 4096, 8192}, {999999, 1, 65536, 131072}};
  for (const auto& c : cases) {
    const layout::PiecePlan plan(c.bytes, c.elem, c.chunk, c.piece);
    const std::uint64_t chunks = (c.bytes + c.chunk - 1) / c.chunk;
    EXPECT_EQ(plan.chunks(), chunks);
    std::uint64_t next_chunk = 0;
    std::uint64_t covered_to = 0;  // elements [0, covered_to) touched so far
    for (std::uint64_t p = 0; p < plan.size(); ++p) {
      const auto piece = plan.at(p);
      EXPECT_EQ(piece.first_chunk, next_chunk);
      EXPECT_GT(piece.end_chunk, piece.first_chunk);
      next_chunk = piece.end_chunk;
      EXPECT_LE(piece.first_elem, covered_to);
      EXPECT_LE(piece.num_elems, plan.max_elems());
      covered_to = piece.first_elem + piece.num_elems;
      // Every completed chunk's bytes lie inside [first_elem, first_elem + num_elems) elements.
      EXPECT_LE(piece.first_elem * c.elem, piece.first_chunk * c.chunk);
      EXPECT_GE(covered_to * c.elem, std::min(piece.end_chunk * c.chunk, c.bytes));
      EXPECT_LE(piece.num_elems * c.elem, std::max(c.piece, c.chunk) + 2 * c.elem);
    }
    EXPECT_EQ(next_chunk, chunks);
    EXPECT_EQ(covered_to, c.bytes / c.elem);
  }
}

TEST(SnapshotLayout, DatasetNamesEscapeSlashPercentNulAndDot) {
  using format::dataset_name;
  using format::tensor_name;
  EXPECT_EQ(dataset_name("layers.0.q_proj"), "layers.0.q_proj");
  EXPECT_EQ(dataset_name("model/embed"), "model%2Fembed");
  EXPECT_EQ(dataset_name("100%"), "100%25");
  EXPECT_EQ(dataset_name(std::string("a\0b", 3)), "a%00b");
  EXPECT_EQ(dataset_name("."), "%2E");
  EXPECT_EQ(dataset_name(".."), "..");
  EXPECT_EQ(format::dataset_path("a/b"), "/tensors/a%2Fb");
  const std::vector<std::string> names = {"x",   ".",      "..", "%", "%2F", "/", "//a/", std::string("\0", 1),
                                          "%2E", "a.b/c%d"};
  for (const auto& n : names) {
    const auto back = tensor_name(dataset_name(n));
    ASSERT_TRUE(back.has_value()) << n;
    EXPECT_EQ(*back, n);
    EXPECT_EQ(dataset_name(n).find('/'), std::string::npos);
  }
  EXPECT_FALSE(tensor_name("a/b").has_value());
  EXPECT_FALSE(tensor_name("%41").has_value());
  EXPECT_FALSE(tensor_name("%2").has_value());
  EXPECT_FALSE(tensor_name(".").has_value());
}

TEST(SnapshotLayout, CheckedBytesRefusesOverflowAndNegativeDimensions) {
  EXPECT_EQ(format::checked_bytes({"a", DType::kF32, {2, 3}}, "f"), 24u);
  EXPECT_EQ(format::checked_bytes({"a", DType::kF32, {}}, "f"), 4u);
  EXPECT_THROW(format::checked_bytes({"a", DType::kF32, {1ll << 32, 1ll << 32}}, "f"), SnapshotError);
  EXPECT_THROW(format::checked_bytes({"a", DType::kF64, {1ll << 54}}, "f"), SnapshotError);
  EXPECT_THROW(format::checked_bytes({"a", DType::kF32, {-1, 4}}, "f"), SnapshotError);
  EXPECT_THROW(format::checked_bytes({"a", DType::kU8, std::vector<std::int64_t>(33, 1)}, "f"), SnapshotError);
}

}  // namespace
}  // namespace tensorhub::snapshot
