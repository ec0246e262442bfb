// Global tensors through the hub: two ranks of a publishing group publish the two boxes of one
// tensor (dim-0 TP shards), the version commits and each box is pulled by its name; a layout that
// overlaps is refused at commit with the tensors named, and nothing becomes readable.
#include <gtest/gtest.h>

#include "hub_test_util.hpp"
#include "tensorhub/core/box.hpp"

namespace tensorhub::test {
namespace {

// Rank r's box of w[rows, 64] (f32) cut in 2 along dim 0, over `data`.
Tensor box_of(std::vector<float>& data, std::int64_t rows, std::int64_t r, std::int64_t shift = 0) {
  const std::vector<std::int64_t> global{rows, 64};
  Box b = split(global, 0, 2, r);
  b.offset[0] -= shift;
  data.assign(static_cast<std::size_t>(b.extent[0] * 64), static_cast<float>(r + 1));
  return host_slice("w.tp" + std::to_string(r), DType::kF32, b.extent, data.data(), "w", global, b.offset);
}

TEST_F(LocalHubs, BoxesOfAGlobalTensorCommitAndArePulledByName) {
  auto& r0 = add_hub();
  auto& r1 = add_hub();
  auto& reader = add_hub();
  std::vector<float> d0, d1;
  const Tensor t0 = box_of(d0, 41, 0);  // 21 + 20 rows: uneven
  const Tensor t1 = box_of(d1, 41, 1);
  EXPECT_FALSE(r0.publish("m", 1, std::span(&t0, 1), Group{"tp", 2, 0}).committed);
  EXPECT_TRUE(r1.publish("m", 1, std::span(&t1, 1), Group{"tp", 2, 1}).committed);
  std::vector<float> got(20 * 64, 0);
  const Tensor want = host_tensor("w.tp1", DType::kF32, {20, 64}, got.data());
  reader.pull("m", Version::latest(), std::span(&want, 1), {});
  EXPECT_EQ(got, d1);
}

TEST_F(LocalHubs, OverlappingBoxesAreRefusedAtCommit) {
  auto& r0 = add_hub();
  auto& r1 = add_hub();
  std::vector<float> d0, d1;
  const Tensor t0 = box_of(d0, 40, 0);
  const Tensor t1 = box_of(d1, 40, 1, /*shift=*/1);  // rows 19..39 against 0..20: row 19 twice
  r0.publish("m", 2, std::span(&t0, 1), Group{"tp", 2, 0});
  try {
    r1.publish("m", 2, std::span(&t1, 1), Group{"tp", 2, 1});
    ADD_FAILURE() << "an overlapping layout committed";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("'w.tp0' [0:20, 0:64] and 'w.tp1' [19:39, 0:64] overlap"), std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(r0.latest("m").has_value());
}

}  // namespace
}  // namespace tensorhub::test
