// lib/core box.hpp and global tensors in manifests: split, intersect and tiling as properties over
// random shapes, dims and splits; assemble_manifest / validate_manifest / JSON with boxes: exact
// tilings accepted, overlaps, gaps, disagreeing dtypes or shapes and name clashes refused.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "tensorhub/core/box.hpp"
#include "tensorhub/core/error.hpp"
#include "tensorhub/core/limits.hpp"
#include "tensorhub/core/manifest.hpp"
#include "tensorhub/core/manifest_json.hpp"

namespace tensorhub {
namespace {

template <class Fn>
std::string user_error(Fn&& fn) {
  try {
    fn();
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

// Every element of `shape` counted by how many boxes hold it (small shapes only).
std::vector<int> coverage(const std::vector<std::int64_t>& shape, const std::vector<Box>& boxes) {
  std::uint64_t n = 1;
  for (auto d : shape) n *= static_cast<std::uint64_t>(d);
  std::vector<int> count(n, 0);
  for (const auto& b : boxes) {
    std::vector<std::int64_t> at(b.offset);
    if (volume(b) == 0) continue;
    while (true) {
      std::uint64_t flat = 0;
      for (std::size_t d = 0; d < shape.size(); ++d) flat = flat * shape[d] + at[d];
      ++count[flat];
      std::size_t d = shape.size();
      bool done = true;
      while (d > 0) {
        --d;
        if (++at[d] < b.offset[d] + b.extent[d]) {
          done = false;
          break;
        }
        at[d] = b.offset[d];
      }
      if (done) break;
    }
  }
  return count;
}

TEST(Box, SplitsOfRandomShapesTileExactlyAndAsEvenlyAsPossible) {
  std::mt19937 rng(20261207);
  for (int trial = 0; trial < 300; ++trial) {
    const std::size_t rank = 1 + rng() % 3;
    std::vector<std::int64_t> shape(rank);
    for (auto& d : shape) d = 1 + static_cast<std::int64_t>(rng() % 9);
    const std::size_t dim = rng() % rank;
    const std::int64_t parts = 1 + static_cast<std::int64_t>(rng() % 6);
    std::vector<Box> boxes;
    std::vector<std::string> owners;
    std::int64_t smallest = shape[dim], largest = 0;
    for (std::int64_t i = 0; i < parts; ++i) {
      boxes.push_back(split(shape, dim, parts, i));
      owners.push_back("p" + std::to_string(i));
      smallest = std::min(smallest, boxes.back().extent[dim]);
      largest = std::max(largest, boxes.back().extent[dim]);
      ASSERT_TRUE(inside(shape, boxes.back())) << describe(boxes.back());
    }
    EXPECT_LE(largest - smallest, 1);
    for (int c : coverage(shape, boxes)) ASSERT_EQ(c, 1);
    EXPECT_NO_THROW(check_tiling("w", shape, boxes, owners));
    // Intersections against a random box agree with counting elements.
    Box probe{std::vector<std::int64_t>(rank), std::vector<std::int64_t>(rank)};
    for (std::size_t d = 0; d < rank; ++d) {
      probe.offset[d] = static_cast<std::int64_t>(rng() % shape[d]);
      probe.extent[d] = 1 + static_cast<std::int64_t>(rng() % (shape[d] - probe.offset[d]));
    }
    std::uint64_t met = 0;
    for (const auto& b : boxes) {
      if (const auto c = intersect(b, probe)) met += volume(*c);
    }
    EXPECT_EQ(met, volume(probe));
  }
}

TEST(Box, TilingFindsOverlapsAndGapsOfRandomLayouts) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    const std::vector<std::int64_t> shape{1 + static_cast<std::int64_t>(rng() % 7),
                                          1 + static_cast<std::int64_t>(rng() % 7)};
    const std::int64_t parts = 2 + static_cast<std::int64_t>(rng() % 3);
    const std::size_t dim = rng() % 2;
    if (shape[dim] < parts) continue;
    std::vector<Box> boxes;
    std::vector<std::string> owners;
    for (std::int64_t i = 0; i < parts; ++i) {
      boxes.push_back(split(shape, dim, parts, i));
      owners.push_back("p" + std::to_string(i));
    }
    const auto victim = static_cast<std::size_t>(rng() % parts);
    const bool grow = rng() % 2 == 0;
    if (grow && boxes[victim].offset[dim] > 0) {
      --boxes[victim].offset[dim];  // reaches into its neighbour
      ++boxes[victim].extent[dim];
      EXPECT_NE(user_error([&] { check_tiling("w", shape, boxes, owners); }).find("overlap"), std::string::npos);
    } else if (boxes[victim].extent[dim] > 1) {
      --boxes[victim].extent[dim];  // leaves one row or column uncovered
      const auto text = user_error([&] { check_tiling("w", shape, boxes, owners); });
      EXPECT_NE(text.find("is in none"), std::string::npos) << text;
      const auto count = coverage(shape, boxes);
      EXPECT_EQ(std::count(count.begin(), count.end(), 0), shape[1 - dim]);
    }
  }
}

TEST(Box, MessagesNameTheTensorsAndTheBoxes) {
  const std::vector<std::int64_t> shape{8, 4};
  const std::vector<Box> boxes{{{0, 0}, {5, 4}}, {{4, 0}, {4, 4}}};
  const std::vector<std::string> owners{"w.tp0", "w.tp1"};
  const auto text = user_error([&] { check_tiling("w", shape, boxes, owners); });
  EXPECT_NE(text.find("global tensor 'w' [8,4]: 'w.tp0' [0:5, 0:4] and 'w.tp1' [4:8, 0:4] overlap in [4:5, 0:4]"),
            std::string::npos)
      << text;
  const auto gap = user_error([&] { check_tiling("w", shape, std::vector<Box>{{{0, 0}, {8, 3}}}, owners); });
  EXPECT_NE(gap.find("cover 24 of 32 elements; element [0,3] is in none"), std::string::npos) << gap;
  const auto out = user_error([&] { check_tiling("w", shape, std::vector<Box>{{{6, 0}, {4, 4}}}, owners); });
  EXPECT_NE(out.find("outside the tensor"), std::string::npos) << out;
  EXPECT_NE(user_error([] { split(std::vector<std::int64_t>{4}, 1, 2, 0); }), "");
  EXPECT_NE(user_error([] { split(std::vector<std::int64_t>{4}, 0, 2, 2); }), "");
  EXPECT_EQ(split(std::vector<std::int64_t>{8, 3}, 0, 3, 2), (Box{{6, 0}, {2, 3}}));  // 3, 3, 2
}

// Shard s of `parts` holds box s of w[8,6] cut along `dim` (bf16), plus a plain tensor.
std::vector<ShardManifest> sliced_shards(std::size_t dim, std::int64_t parts) {
  const std::vector<std::int64_t> global{8, 6};
  std::vector<ShardManifest> shards;
  for (std::int64_t s = 0; s < parts; ++s) {
    const Box b = split(global, dim, parts, s);
    ShardManifest m;
    m.shard = static_cast<std::uint32_t>(s);
    TensorSpec spec{"w.part" + std::to_string(s), DType::kBF16, b.extent};
    spec.global_name = "w";
    spec.global_shape = global;
    spec.box_offset = b.offset;
    m.tensors.push_back(spec);
    m.checksums.emplace_back(1, 100 + s);
    if (s == 0) {
      m.tensors.push_back(TensorSpec{"norm", DType::kF32, {6}});
      m.checksums.emplace_back(1, 7);
    }
    shards.push_back(std::move(m));
  }
  return shards;
}

TEST(GlobalTensors, AssembleAcceptsExactTilingsAlongEitherDimension) {
  for (std::size_t dim : {0u, 1u}) {
    const auto m = assemble_manifest("policy", 1, 4096, sliced_shards(dim, 3));
    EXPECT_EQ(m.tensors.size(), 4u);
    EXPECT_NO_THROW(validate_manifest(m));
    EXPECT_EQ(describe(m.tensors[0].spec), dim == 0 ? "bf16[3,6] of w[8,6] at [0,0]" : "bf16[8,2] of w[8,6] at [0,0]");
    // Through JSON (snapshots keep it) and back: the boxes survive; a manifest without them too.
    EXPECT_EQ(manifest_from_json(manifest_to_json(m)), m);
  }
}

TEST(GlobalTensors, OverlapsGapsAndDisagreementsAreRefusedAtAssembly) {
  auto overlap = sliced_shards(0, 2);
  overlap[1].tensors[0].box_offset = {3, 0};  // rows 3..6 next to rows 0..3: one row twice
  EXPECT_NE(user_error([&] { assemble_manifest("policy", 1, 4096, overlap); }).find("overlap in [3:4, 0:6]"),
            std::string::npos);
  auto gap = sliced_shards(0, 2);
  gap.pop_back();
  gap[0].shard = 0;
  EXPECT_NE(user_error([&] { assemble_manifest("policy", 1, 4096, gap); }).find("cover 24 of 48 elements"),
            std::string::npos);
  auto dtype = sliced_shards(1, 2);
  dtype[1].tensors[0].dtype = DType::kF16;
  EXPECT_NE(user_error([&] { assemble_manifest("policy", 1, 4096, dtype); }).find("disagree"), std::string::npos);
  auto clash = sliced_shards(0, 2);
  clash[0].tensors[1].name = "w";  // a plain tensor named like the global one
  EXPECT_NE(user_error([&] { assemble_manifest("policy", 1, 4096, clash); }).find("names both"), std::string::npos);
  auto outside = sliced_shards(0, 2);
  outside[1].tensors[0].box_offset = {6, 0};
  EXPECT_NE(user_error([&] { assemble_manifest("policy", 1, 4096, outside); }).find("outside the global tensor"),
            std::string::npos);
  auto rank = sliced_shards(0, 2);
  rank[1].tensors[0].box_offset = {4};
  EXPECT_NE(user_error([&] { assemble_manifest("policy", 1, 4096, rank); }).find("one entry per dimension"),
            std::string::npos);
  auto nameless = sliced_shards(0, 2);
  nameless[1].tensors[0].global_name.clear();
  EXPECT_NE(user_error([&] { assemble_manifest("policy", 1, 4096, nameless); }).find("no global tensor name"),
            std::string::npos);
}

// A manifest from the wire cannot make the tiling check slow: boxes per global tensor are capped
// (a dim-1 split is compared pairwise), and the search for an uncovered element is bounded.
TEST(GlobalTensors, BoxCountIsBoundedAndLargeGapsAreReportedQuickly) {
  const std::int64_t n = limits::kMaxBoxesPerGlobalTensor + 1;
  ShardManifest m;
  for (std::int64_t i = 0; i < n; ++i) {
    TensorSpec spec{"w." + std::to_string(i), DType::kU8, {1, 4096}};
    spec.global_name = "w";
    spec.global_shape = {1, 4096 * n};
    spec.box_offset = {0, 4096 * i};
    m.tensors.push_back(spec);
    m.checksums.emplace_back(1, static_cast<std::uint64_t>(i));
  }
  EXPECT_NE(user_error([&] { assemble_manifest("policy", 1, 4096, {m}); }).find("more than 4096 boxes"),
            std::string::npos);
  // 2000 boxes of a 3-d tensor, every third one missing: refused, naming an element or not.
  std::vector<Box> boxes;
  std::vector<std::string> owners;
  for (std::int64_t i = 0; i < 3000; ++i) {
    if (i % 3 == 2) continue;
    boxes.push_back(Box{{0, i, 0}, {2, 1, 2}});
    owners.push_back("b" + std::to_string(i));
  }
  const std::vector<std::int64_t> shape{2, 3000, 2};
  EXPECT_NE(user_error([&] { check_tiling("w", shape, boxes, owners); }).find("cover 8000 of 12000"),
            std::string::npos);
}

}  // namespace
}  // namespace tensorhub
