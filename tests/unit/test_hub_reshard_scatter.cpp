// Row-parallel resharding through the hub: four publishers hold a bf16 tensor cut along dim 1
// (each row of a box 1 KiB), a TP=2 reader cut along dim 1 pulls its box: every chunk of the
// boxes it covers lands straight in the reader's strided rows (scattered, no staging), and with
// HubOptions::scatter_reads off the same chunks are staged and copied; every element checked.
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "hub_test_util.hpp"
#include "tensorhub/core/box.hpp"

namespace tensorhub::test {
namespace {

const std::vector<std::int64_t> kWide{40, 2048};  // bf16: 160 KiB; publishers' rows 1 KiB

std::uint16_t at(std::int64_t i, std::int64_t j) { return static_cast<std::uint16_t>(i * 2053 + j * 7 + 3); }

std::vector<std::uint16_t> elements(const Box& b) {
  std::vector<std::uint16_t> v;
  for (std::int64_t i = 0; i < b.extent[0]; ++i) {
    for (std::int64_t j = 0; j < b.extent[1]; ++j) v.push_back(at(b.offset[0] + i, b.offset[1] + j));
  }
  return v;
}

class ReshardScatter : public LocalHubs {
 protected:
  void publish() {
    shards_.resize(4);
    for (std::int64_t r = 0; r < 4; ++r) {
      auto& hub = add_hub();
      const Box b = split(kWide, 1, 4, r);
      shards_[r] = elements(b);
      const Tensor t =
          host_slice("w.tp" + std::to_string(r), DType::kBF16, b.extent, shards_[r].data(), "w", kWide, b.offset);
      hub.publish("m", 1, std::span(&t, 1), Group{"trainer", 4, static_cast<std::uint32_t>(r)});
    }
  }
  std::vector<std::vector<std::uint16_t>> shards_;
};

TEST_F(ReshardScatter, RowParallelBoxesLandScatteredWithoutStaging) {
  publish();
  auto& reader = add_hub();
  auto staging = small_chunks();
  staging.scatter_reads = false;
  auto& staged_reader = add_hub(staging);
  const auto v = reader.status().front().versions.back();
  EXPECT_EQ(v.tensors, 4u);
  EXPECT_EQ(v.global_tensors, (std::vector<GlobalTensorInfo>{{"w", DType::kBF16, kWide, 4}}))
      << "status names the global tensor its 4 boxes tile";
  for (const std::int64_t k : {0, 1}) {
    const Box b = split(kWide, 1, 2, k);
    PullOptions o;
    o.relay = false;
    std::vector<std::uint16_t> got(static_cast<std::size_t>(volume(b)), 0);
    const Tensor want = host_slice("w@" + std::to_string(k), DType::kBF16, b.extent, got.data(), "w", kWide, b.offset);
    const auto r = reader.pull("m", Version::exact(1), std::span(&want, 1), o);
    ASSERT_EQ(got, elements(b)) << "box " << k;
    EXPECT_EQ(r.scattered_bytes, got.size() * 2) << "every chunk of the two shards it covers";
    EXPECT_EQ(r.staged_bytes, 0u);
    std::fill(got.begin(), got.end(), 0);
    const auto s = staged_reader.pull("m", Version::exact(1), std::span(&want, 1), o);
    ASSERT_EQ(got, elements(b)) << "box " << k << ", staged";
    EXPECT_EQ(s.scattered_bytes, 0u);
    EXPECT_EQ(s.staged_bytes, got.size() * 2);
  }
}

// A retained sliced version offloaded to its snapshot file (one trainer process holding the 4
// boxes): with no live holder left, box pulls of any cut read the chunks they need from the
// datasets of the boxes they meet, verified, and get exactly their elements.
TEST_F(ReshardScatter, BoxesAreReadFromTheSnapshotFileWhenNoHolderIsLeft) {
  namespace fs = std::filesystem;
  std::string dir = (fs::temp_directory_path() / "tensorhub-reshard-snap-XXXXXX").string();
  ASSERT_NE(mkdtemp(dir.data()), nullptr);
  auto o = small_chunks();
  o.snapshot_dir = dir;
  auto& trainer = add_hub(o);
  std::vector<Tensor> boxes;
  shards_.resize(4);
  for (std::int64_t r = 0; r < 4; ++r) {
    const Box b = split(kWide, 1, 4, r);
    shards_[r] = elements(b);
    boxes.push_back(
        host_slice("w.tp" + std::to_string(r), DType::kBF16, b.extent, shards_[r].data(), "w", kWide, b.offset));
  }
  trainer.publish("m", 7, boxes, std::nullopt);
  trainer.retain("m", 7);
  trainer.unpublish("m", 7);                                 // its last holder: offloaded to <dir>/m/v7.h5
  for (auto& s : shards_) std::fill(s.begin(), s.end(), 0);  // the trainer's memory is its own again
  auto& reader = add_hub();
  for (const std::size_t dim : {0u, 1u}) {
    for (const std::int64_t k : {0, 1, 2}) {
      const Box b = split(kWide, dim, 3, k);
      std::vector<std::uint16_t> got(static_cast<std::size_t>(volume(b)), 0);
      const Tensor want = host_slice("w@", DType::kBF16, b.extent, got.data(), "w", kWide, b.offset);
      PullOptions po;
      po.relay = false;
      const auto r = reader.pull("m", Version::exact(7), std::span(&want, 1), po);
      ASSERT_EQ(got, elements(b)) << "box " << k << " of 3 along dim " << dim;
      EXPECT_GE(r.file_bytes, got.size() * 2);
      EXPECT_LE(r.file_bytes, volume(Box{{0, 0}, kWide}) * 2);
    }
  }
  reader.release("m", 7);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace tensorhub::test
