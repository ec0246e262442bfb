// pull_fp8 (tensorhub/fp8_pull.hpp): a reader pulls a publisher's bf16 tensors as FP8 (issue 45).
// Odd shapes (300 x 200 in 128 x 128 blocks, a 1-D tensor, a 3-D tensor as a matrix) in two
// formats and three block layouts, in batches that a small staging budget forces: every FP8
// value and scale equals quantize_bf16 of the publisher's own memory, nothing is relayed, and
// bad requests are refused before anything is pulled.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "fp8_pull_with.hpp"
#include "hub_test_util.hpp"

namespace tensorhub::test {
namespace {

std::vector<std::uint16_t> bf16_values(std::size_t n, std::uint32_t seed) {
  std::vector<std::uint16_t> v(n);
  for (auto& x : v) {
    seed = seed * 1664525u + 1013904223u;
    x = static_cast<std::uint16_t>(((seed >> 16) & 0x8000) | ((110 + (seed >> 8) % 30) << 7) | (seed & 0x7F));
  }
  return v;
}

struct Fp8Buffers {
  Fp8Buffers(std::string name, Fp8Blocks b, Fp8Format f) : blocks(b), q(b.elements()), s(b.scales()) {
    d.name = std::move(name);
    d.data = q.data();
    d.data_bytes = q.size();
    d.scale_inv = s.data();
    d.scales = s.size();
    d.format = f;
    d.block_rows = b.block_rows;
    d.block_cols = b.block_cols;
  }
  Fp8Blocks blocks;
  std::vector<std::uint8_t> q;
  std::vector<float> s;
  Fp8Destination d;
};

class HubFp8 : public LocalHubs {
 protected:
  Fp8PullResult pull(HubCore& hub, std::vector<Fp8Destination> into, Fp8PullOptions o = {}) {
    return pull_fp8_with([&](const std::string& m, const Version& v) { return hub.manifest(m, v); },
                         [&](const std::string& m, const Version& v, std::span<const Tensor> t, const PullOptions& po) {
                           return hub.pull(m, v, t, po);
                         },
                         "m", Version::latest(), into, o);
  }
};

TEST_F(HubFp8, BatchesOfBf16BecomeExactlyTheQuantizedValues) {
  auto& pub = add_hub();
  const auto a = bf16_values(300 * 200, 1);
  const auto b = bf16_values(7, 2);
  const auto c = bf16_values(2 * 3 * 130, 3);
  const std::vector<float> f(10, 1.0f);
  const std::vector<Tensor> ts{host_tensor("a", DType::kBF16, {300, 200}, const_cast<std::uint16_t*>(a.data())),
                               host_tensor("b", DType::kBF16, {7}, const_cast<std::uint16_t*>(b.data())),
                               host_tensor("c", DType::kBF16, {2, 3, 130}, const_cast<std::uint16_t*>(c.data())),
                               host_tensor("f", DType::kF32, {10}, const_cast<float*>(f.data()))};
  pub.publish("m", 1, ts, std::nullopt);
  auto& reader = add_hub();
  Fp8Buffers qa("a", Fp8Blocks{300, 200, 128, 128}, Fp8Format::kE4M3FN);
  Fp8Buffers qb("b", Fp8Blocks{1, 7, 1, 7}, Fp8Format::kE5M2);
  Fp8Buffers qc("c", Fp8Blocks{6, 130, 1, 130}, Fp8Format::kE4M3FN);
  Fp8PullOptions o;
  o.staging_bytes = 64 << 10;  // a (120,000 bytes) alone, then b and c together
  const auto r = pull(reader, {qa.d, qb.d, qc.d}, o);
  EXPECT_EQ(r.batches, 2u);
  EXPECT_EQ(r.converted_bytes, (a.size() + b.size() + c.size()) * 2);
  EXPECT_EQ(r.staging_bytes, (a.size() + b.size() + c.size()) * 2) << "batch 1 in one buffer, batch 2 in the other";
  EXPECT_EQ(r.pull.bytes, r.converted_bytes);
  EXPECT_EQ(r.pull.version, 1u);
  for (const auto* k : {&qa, &qb, &qc}) {
    const auto& src = k == &qa ? a : k == &qb ? b : c;
    std::vector<std::uint8_t> q(k->q.size());
    std::vector<float> s(k->s.size());
    quantize_bf16(src, k->blocks, k->d.format, q, s);
    EXPECT_EQ(k->q, q) << k->d.name;
    EXPECT_EQ(k->s, s) << k->d.name;
  }
  EXPECT_EQ(version_status("m", 1)->holders, 1u) << "an FP8 reader relays nothing";
}

TEST_F(HubFp8, BadRequestsAreRefusedBeforeAnythingIsPulled) {
  auto& pub = add_hub();
  auto a = bf16_values(64, 4);
  a[37] = 0x7FC0;  // NaN: (0, 37) of block (0, 0)
  const std::vector<float> f(4, 1.0f);
  const auto g = bf16_values(64, 5);
  const std::vector<Tensor> ts{host_tensor("a", DType::kBF16, {64}, a.data()),
                               host_tensor("f", DType::kF32, {4}, const_cast<float*>(f.data())),
                               host_tensor("g", DType::kBF16, {64}, const_cast<std::uint16_t*>(g.data()))};
  pub.publish("m", 1, ts, std::nullopt);
  auto& reader = add_hub();
  const auto refused = [&](std::vector<Fp8Destination> into, Fp8PullOptions o = {}) -> std::string {
    try {
      pull(reader, std::move(into), o);
    } catch (const UserError& e) {
      return e.what();
    }
    return "(not refused)";
  };
  Fp8Buffers qa("a", Fp8Blocks{1, 64, 1, 64}, Fp8Format::kE4M3FN);
  Fp8Buffers qf("f", Fp8Blocks{1, 4, 1, 4}, Fp8Format::kE4M3FN);
  Fp8Buffers qx("x", Fp8Blocks{1, 4, 1, 4}, Fp8Format::kE4M3FN);
  EXPECT_NE(refused({qf.d}).find("tensor 'f' of m v1 is f32, not bf16"), std::string::npos) << refused({qf.d});
  EXPECT_NE(refused({qx.d}).find("m v1 has no tensor 'x'"), std::string::npos);
  EXPECT_NE(refused({qa.d, qa.d}).find("'a' is given twice"), std::string::npos);
  auto small = qa.d;
  small.data_bytes = 63;
  EXPECT_NE(refused({small}).find("it needs 64 FP8 bytes and 1 scales"), std::string::npos) << refused({small});
  Fp8PullOptions grouped;
  grouped.pull.group = Group{"g", 1, 0};
  EXPECT_NE(refused({qa.d}, grouped).find("reading groups are not supported"), std::string::npos);
  EXPECT_NE(refused({qa.d}).find("element (0, 37) of scale block (0, 0) is NaN or infinite"), std::string::npos);
  // The same error from the converting thread while the next batch is pulled.
  Fp8Buffers qg("g", Fp8Blocks{1, 64, 1, 64}, Fp8Format::kE4M3FN);
  Fp8PullOptions one_each;
  one_each.staging_bytes = 1;
  EXPECT_NE(refused({qa.d, qg.d}, one_each).find("element (0, 37)"), std::string::npos);
  const auto r = pull(reader, {qg.d}, one_each);  // the hub is still usable
  EXPECT_EQ(r.converted_bytes, 128u);
}

}  // namespace
}  // namespace tensorhub::test
