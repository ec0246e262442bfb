// lib/transfer box_runs.hpp: the runs that copy the intersection of a source box and a
// destination box, as a property over random ranks, shapes and boxes: applying the pieces of any
// window sequence over the source bytes (for_each_piece, as the engine does chunk by chunk) puts
// exactly the intersection's elements where the destination box holds them and nothing else;
// touches and direct_offset agree with the pieces; the common cuts give one run.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "tensorhub/core/box.hpp"
#include "tensorhub/core/error.hpp"
#include "tensorhub/transfer/box_runs.hpp"

namespace tensorhub::transfer {
namespace {

std::uint64_t flat(const std::vector<std::int64_t>& at, const std::vector<std::int64_t>& off,
                   const std::vector<std::int64_t>& ext) {
  std::uint64_t f = 0;
  for (std::size_t d = 0; d < at.size(); ++d) f = f * static_cast<std::uint64_t>(ext[d]) + (at[d] - off[d]);
  return f;
}

// Each element of box `b` (row-major), given its global coordinates.
template <class Fn>
void each_element(const Box& b, Fn&& fn) {
  if (volume(b) == 0) return;
  std::vector<std::int64_t> at(b.offset);
  for (;;) {
    fn(at);
    std::size_t d = at.size();
    while (d > 0) {
      --d;
      if (++at[d] < b.offset[d] + b.extent[d]) break;
      at[d] = b.offset[d];
      if (d == 0) return;
    }
    if (at.empty()) return;
  }
}

Box random_box(std::mt19937& rng, const std::vector<std::int64_t>& shape) {
  Box b;
  for (const auto n : shape) {
    const auto lo = std::uniform_int_distribution<std::int64_t>(0, n - 1)(rng);
    const auto hi = std::uniform_int_distribution<std::int64_t>(lo + 1, n)(rng);
    b.offset.push_back(lo);
    b.extent.push_back(hi - lo);
  }
  return b;
}

TEST(BoxRuns, PiecesCopyExactlyTheIntersectionForRandomBoxesAndWindows) {
  std::mt19937 rng(40);
  for (int iter = 0; iter < 3000; ++iter) {
    const auto rank = std::uniform_int_distribution<std::size_t>(1, 4)(rng);
    std::vector<std::int64_t> shape;
    for (std::size_t d = 0; d < rank; ++d) shape.push_back(std::uniform_int_distribution<std::int64_t>(1, 7)(rng));
    // Whole-dimension boxes are common (TP cuts), so make some boxes span dimensions whole.
    Box src = random_box(rng, shape);
    Box dst = random_box(rng, shape);
    for (std::size_t d = 0; d < rank; ++d) {
      if (rng() % 2 == 0) src.offset[d] = 0, src.extent[d] = shape[d];
      if (rng() % 2 == 0) dst.offset[d] = 0, dst.extent[d] = shape[d];
    }
    const std::uint64_t elem = 1 + rng() % 4;
    // The source holds each element's global flat index (in `elem` bytes, low byte first).
    std::vector<unsigned char> s(volume(src) * elem);
    each_element(src, [&](const std::vector<std::int64_t>& at) {
      const auto g = flat(at, std::vector<std::int64_t>(rank, 0), shape);
      for (std::uint64_t b = 0; b < elem; ++b) s[flat(at, src.offset, src.extent) * elem + b] = (g >> (8 * b)) & 0xff;
    });
    const auto runs = box_runs(src, dst, elem);
    const auto cut = intersect(src, dst);
    ASSERT_EQ(run_bytes(runs), cut ? volume(*cut) * elem : 0);
    std::vector<unsigned char> d(volume(dst) * elem, 0xee);
    std::vector<int> written(d.size(), 0);
    // Windows of a random size, like chunks.
    const std::uint64_t window = 1 + rng() % (s.size() + 2);
    for (std::uint64_t lo = 0; lo < s.size(); lo += window) {
      const auto hi = std::min<std::uint64_t>(lo + window, s.size());
      bool any = false;
      std::uint64_t pieces = 0;
      std::uint64_t last = 0;
      for_each_piece(runs, lo, hi, [&](std::uint64_t from, std::uint64_t to, std::uint64_t len) {
        ASSERT_GE(from, lo);
        ASSERT_LE(from + len, hi);
        ASSERT_LE(to + len, d.size());
        for (std::uint64_t k = 0; k < len; ++k) {
          d[to + k] = s[from + k];
          ++written[to + k];
        }
        any = true;
        ++pieces;
        last = to;
      });
      EXPECT_EQ(touches(runs, lo, hi), any);
      const auto direct = direct_offset(runs, lo, hi);
      if (direct) {
        EXPECT_EQ(*direct, last);
        EXPECT_EQ(pieces, 1u);
      }
    }
    // Every element of the destination box: written once with its global index if in the
    // intersection, untouched otherwise.
    each_element(dst, [&](const std::vector<std::int64_t>& at) {
      bool in = true;
      for (std::size_t k = 0; k < rank; ++k) {
        in &= at[k] >= src.offset[k] && at[k] < src.offset[k] + src.extent[k];
      }
      const auto g = flat(at, std::vector<std::int64_t>(rank, 0), shape);
      const auto i = flat(at, dst.offset, dst.extent) * elem;
      for (std::uint64_t b = 0; b < elem; ++b) {
        if (in) {
          ASSERT_EQ(written[i + b], 1) << "iteration " << iter;
          ASSERT_EQ(d[i + b], (g >> (8 * b)) & 0xff) << "iteration " << iter;
        } else {
          ASSERT_EQ(written[i + b], 0) << "iteration " << iter;
        }
      }
    });
  }
}

TEST(BoxRuns, CommonCutsGiveOneRun) {
  const std::vector<std::int64_t> shape{1000, 64};
  // dim 0 against dim 0 (FSDP, column-parallel): one contiguous segment.
  auto runs = box_runs(split(shape, 0, 8, 3), split(shape, 0, 3, 1), 2);
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].count, 1u);
  EXPECT_EQ(runs[0].length, 125u * 64 * 2);
  // source rows 375..500 of the destination's rows 334..667: at destination row 41.
  EXPECT_EQ(runs[0].dst, 41u * 64 * 2);
  EXPECT_EQ(runs[0].src, 0u);
  // dim 1 against dim 1 (row-parallel): one segment per row, strided on both sides.
  runs = box_runs(split(shape, 1, 8, 2), split(shape, 1, 2, 0), 2);
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].count, 1000u);
  EXPECT_EQ(runs[0].length, 8u * 2);
  EXPECT_EQ(runs[0].src_stride, 8u * 2);
  EXPECT_EQ(runs[0].dst_stride, 32u * 2);
  EXPECT_EQ(runs[0].dst, 16u * 2);
  // The whole tensor against a box of it, and boxes that do not meet.
  runs = box_runs(Box{{0, 0}, shape}, split(shape, 0, 2, 1), 4);
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].src, 500u * 64 * 4);
  EXPECT_TRUE(box_runs(split(shape, 0, 2, 0), split(shape, 0, 2, 1), 4).empty());
  // An experts dimension cut ([E, H, W] by E against by W): one run per expert kept.
  const std::vector<std::int64_t> moe{4, 6, 10};
  runs = box_runs(split(moe, 0, 2, 1), split(moe, 2, 2, 0), 1);
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].count, 6u);
}

TEST(BoxRuns, RefusesBoxesOfDifferentRank) {
  EXPECT_THROW(box_runs(Box{{0}, {4}}, Box{{0, 0}, {4, 4}}, 4), UserError);
  EXPECT_THROW(box_runs(Box{{0}, {4}}, Box{{0}, {4}}, 0), UserError);
}

}  // namespace
}  // namespace tensorhub::transfer
