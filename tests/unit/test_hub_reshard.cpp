// Resharding through the hub (issue 40): four publishers of one group hold a global bf16 tensor
// of odd size cut along dim 0 or along dim 1, and readers pull their own tensor-parallel box of it
// (TP = 1, 2 and an uneven 3, cut along either dim): every element is checked against the global
// tensor, nothing is relayed, only chunks at a box's edges or holding strided rows are staged. An
// FSDP-style flat tensor is pulled whole by its global name; a box of a plain tensor; a publisher
// pulling a box that meets its own shard copies that part itself; bad boxes are refused.
#include <gtest/gtest.h>

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "hub_test_util.hpp"
#include "tensorhub/core/box.hpp"

namespace tensorhub::test {
namespace {

const std::vector<std::int64_t> kGlobal{301, 67};  // bf16: 40,334 bytes, about 10 chunks

// The global tensor's element at (i, j): a bf16 bit pattern unique to it.
std::uint16_t at(std::int64_t i, std::int64_t j) { return static_cast<std::uint16_t>(i * 67 + j + 1); }

// The elements of box `b` of the global tensor, row-major.
std::vector<std::uint16_t> elements(const Box& b) {
  std::vector<std::uint16_t> v;
  for (std::int64_t i = 0; i < b.extent[0]; ++i) {
    for (std::int64_t j = 0; j < b.extent[1]; ++j) v.push_back(at(b.offset[0] + i, b.offset[1] + j));
  }
  return v;
}

class Reshard : public LocalHubs {
 protected:
  // Four publishers of group "trainer" hold w cut along `dim`; commits version `v`.
  void publish(std::size_t dim, std::uint64_t v) {
    shards_.resize(4);
    for (std::int64_t r = 0; r < 4; ++r) {
      auto& hub =
          publishers_.size() > static_cast<std::size_t>(r) ? *publishers_[r] : *publishers_.emplace_back(&add_hub());
      const Box b = split(kGlobal, dim, 4, r);
      shards_[r] = elements(b);
      const Tensor t =
          host_slice("w.tp" + std::to_string(r), DType::kBF16, b.extent, shards_[r].data(), "w", kGlobal, b.offset);
      hub.publish("m", v, std::span(&t, 1), Group{"trainer", 4, static_cast<std::uint32_t>(r)});
    }
  }
  std::vector<HubCore*> publishers_;
  std::vector<std::vector<std::uint16_t>> shards_;
};

TEST_F(Reshard, ReadersOfEveryTpSizeAndCutGetExactlyTheirBox) {
  auto& reader = add_hub();
  std::uint64_t v = 0;
  for (const std::size_t src_dim : {0u, 1u}) {
    publish(src_dim, ++v);
    for (const std::size_t dst_dim : {0u, 1u}) {
      for (const std::int64_t tp : {1, 2, 3}) {
        for (std::int64_t k = 0; k < tp; ++k) {
          const Box b = split(kGlobal, dst_dim, tp, k);
          std::vector<std::uint16_t> got(static_cast<std::size_t>(volume(b)), 0);
          const Tensor want =
              host_slice("w@" + std::to_string(k), DType::kBF16, b.extent, got.data(), "w", kGlobal, b.offset);
          PullOptions o;
          o.relay = false;
          const auto r = reader.pull("m", Version::exact(v), std::span(&want, 1), o);
          const std::string what = "publishers cut along dim " + std::to_string(src_dim) + ", reader " +
                                   std::to_string(k) + " of TP=" + std::to_string(tp) + " along dim " +
                                   std::to_string(dst_dim);
          ASSERT_EQ(got, elements(b)) << what;
          EXPECT_EQ(r.bytes - r.local_bytes >= got.size() * 2, true) << what;
          if (src_dim == 0 && dst_dim == 0) {
            // A dim-0 box meets each shard in one contiguous range: at most its two edge chunks staged.
            EXPECT_LE(r.staged_bytes, 2 * 4 * kChunk) << what;
          }
        }
      }
    }
  }
  EXPECT_EQ(reader.status().front().versions.back().holders, 4u) << "a box pull relays nothing";
}

TEST_F(Reshard, SameLayoutIsAPlainPullThatRelays) {
  publish(0, 1);
  auto& reader = add_hub();
  const Box b = split(kGlobal, 0, 4, 2);
  std::vector<std::uint16_t> got(static_cast<std::size_t>(volume(b)), 0);
  const Tensor want = host_slice("mine", DType::kBF16, b.extent, got.data(), "w", kGlobal, b.offset);
  const auto r = reader.pull("m", Version::exact(1), std::span(&want, 1), {});
  EXPECT_EQ(got, elements(b));
  EXPECT_EQ(r.staged_bytes, 0u);
  EXPECT_EQ(reader.status().front().versions.back().holders, 5u) << "it relays the shard it pulled";
}

TEST_F(Reshard, FlatFsdpShardsArePulledWholeByTheGlobalName) {
  std::vector<std::vector<float>> parts(4);
  std::vector<float> full(10007);
  for (std::size_t i = 0; i < full.size(); ++i) full[i] = static_cast<float>(i) * 0.5f;
  const std::vector<std::int64_t> g{10007};
  for (std::int64_t r = 0; r < 4; ++r) {
    auto& hub = add_hub();
    const Box b = split(g, 0, 4, r);
    parts[r].assign(full.begin() + b.offset[0], full.begin() + b.offset[0] + b.extent[0]);
    const Tensor t =
        host_slice("flat." + std::to_string(r), DType::kF32, b.extent, parts[r].data(), "flat", g, b.offset);
    hub.publish("m", 1, std::span(&t, 1), Group{"fsdp", 4, static_cast<std::uint32_t>(r)});
  }
  auto& reader = add_hub();
  std::vector<float> got(full.size(), 0);
  const Tensor want = host_tensor("flat", DType::kF32, g, got.data());
  reader.pull("m", Version::exact(1), std::span(&want, 1), {});
  EXPECT_EQ(got, full);
}

TEST_F(Reshard, ABoxOfAPlainTensor) {
  auto& trainer = add_hub();
  auto whole = elements(Box{{0, 0}, kGlobal});
  const Tensor t = host_tensor("w", DType::kBF16, kGlobal, whole.data());
  trainer.publish("m", 1, std::span(&t, 1), std::nullopt);
  auto& reader = add_hub();
  const Box b = split(kGlobal, 1, 2, 1);
  std::vector<std::uint16_t> got(static_cast<std::size_t>(volume(b)), 0);
  const Tensor want = host_slice("w.half", DType::kBF16, b.extent, got.data(), "w", kGlobal, b.offset);
  reader.pull("m", Version::exact(1), std::span(&want, 1), {});
  EXPECT_EQ(got, elements(b));
}

TEST_F(Reshard, APublisherCopiesThePartOfItsOwnShardItself) {
  publish(0, 1);
  // Publisher 1 (rows 76..151) pulls the first half (rows 0..151): its own rows come from its memory.
  const Box b = split(kGlobal, 0, 2, 0);
  std::vector<std::uint16_t> got(static_cast<std::size_t>(volume(b)), 0);
  const Tensor want = host_slice("half", DType::kBF16, b.extent, got.data(), "w", kGlobal, b.offset);
  const auto r = publishers_[1]->pull("m", Version::exact(1), std::span(&want, 1), {});
  EXPECT_EQ(got, elements(b));
  EXPECT_EQ(r.local_bytes, static_cast<std::uint64_t>(split(kGlobal, 0, 4, 1).extent[0]) * 67 * 2);
}

TEST_F(Reshard, BadBoxesAreRefusedWithTheReason) {
  publish(0, 1);
  auto& reader = add_hub();
  std::vector<std::uint16_t> buf(400 * 67, 0);
  const auto refused = [&](const Tensor& t) -> std::string {
    try {
      reader.pull("m", Version::exact(1), std::span(&t, 1), {});
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_NE(refused(host_slice("a", DType::kF32, {10, 67}, buf.data(), "w", kGlobal, {0, 0})).find("global tensor 'w'"),
            std::string::npos);
  EXPECT_NE(refused(host_slice("b", DType::kBF16, {10, 67}, buf.data(), "w", {300, 67}, {0, 0}))
                .find("is a box of w[300,67]"),
            std::string::npos);
  EXPECT_NE(
      refused(host_slice("c", DType::kBF16, {10, 67}, buf.data(), "w", kGlobal, {295, 0})).find("does not lie inside"),
      std::string::npos);
  EXPECT_NE(refused(host_slice("d", DType::kBF16, {10, 67}, buf.data(), "nope", kGlobal, {0, 0})).find("'nope'"),
            std::string::npos);
  Tensor small = host_slice("e", DType::kBF16, {10, 67}, buf.data(), "w", kGlobal, {0, 0});
  small.bytes = 100;
  EXPECT_NE(refused(small).find("holds 100 bytes"), std::string::npos);
  EXPECT_NE(
      refused(host_tensor("w", DType::kBF16, {300, 67}, buf.data())).find("has global tensor 'w' as bf16[301,67]"),
      std::string::npos);
}

TEST_F(Reshard, TwoGlobalTensorsOfUnevenCutsInOnePull) {
  // The matrix cut along dim 0 and a fused-experts tensor [6, 37, 29] cut along experts (2, 2, 1,
  // 1), both from the same four publishers; the reader wants a dim-2 slice of the experts.
  const std::vector<std::int64_t> experts{6, 37, 29};
  std::vector<std::vector<std::uint16_t>> ex(4);
  for (std::int64_t r = 0; r < 4; ++r) {
    auto& hub = *publishers_.emplace_back(&add_hub());
    const Box mb = split(kGlobal, 0, 4, r);
    const Box eb = split(experts, 0, 4, r);
    shards_.push_back(elements(mb));
    ex[r].resize(volume(eb));
    for (std::size_t i = 0; i < ex[r].size(); ++i) ex[r][i] = static_cast<std::uint16_t>(eb.offset[0] * 37 * 29 + i);
    const std::vector<Tensor> ts{
        host_slice("w.tp" + std::to_string(r), DType::kBF16, mb.extent, shards_.back().data(), "w", kGlobal, mb.offset),
        host_slice("e.ep" + std::to_string(r), DType::kBF16, eb.extent, ex[r].data(), "e", experts, eb.offset)};
    hub.publish("m", 1, ts, Group{"trainer", 4, static_cast<std::uint32_t>(r)});
  }
  auto& reader = add_hub();
  // The reader relays what it pulls (the default), so its buffers must outlive the pulls: a later
  // box that covers whole published shards copies them from the reader's own earlier buffers.
  std::deque<std::vector<std::uint16_t>> kept;
  for (const std::int64_t tp : {1, 2, 3}) {
    for (std::int64_t k = 0; k < tp; ++k) {
      const Box mb = split(kGlobal, 0, tp, k);
      const Box eb = split(experts, 2, tp, k);
      auto& m = kept.emplace_back(volume(mb));
      auto& e = kept.emplace_back(volume(eb));
      const std::vector<Tensor> into{host_slice("w", DType::kBF16, mb.extent, m.data(), "w", kGlobal, mb.offset),
                                     host_slice("e", DType::kBF16, eb.extent, e.data(), "e", experts, eb.offset)};
      const auto r = reader.pull("m", Version::exact(1), into, {});
      EXPECT_EQ(m, elements(mb));
      // Since TP=1 the reader relays every shard whole, so it copies each later box itself.
      EXPECT_EQ(r.local_bytes, tp == 1 ? 0 : (m.size() + e.size()) * 2) << "TP=" << tp << " k=" << k;
      std::vector<std::uint16_t> want;
      for (std::int64_t a = 0; a < 6; ++a)
        for (std::int64_t b = 0; b < 37; ++b)
          for (std::int64_t c = eb.offset[2]; c < eb.offset[2] + eb.extent[2]; ++c)
            want.push_back(static_cast<std::uint16_t>((a * 37 + b) * 29 + c));
      EXPECT_EQ(e, want) << "TP=" << tp << " k=" << k;
    }
  }
}

}  // namespace
}  // namespace tensorhub::test
