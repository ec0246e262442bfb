// Box relays (issue 40): a reader whose box holds published boxes whole and contiguous (a dim-0
// cut: FSDP, column-parallel TP) relays them like tensors it pulled by name. Later readers of
// overlapping boxes read those chunks from it (K = 1: a relay before a publisher), even once
// the publishers are gone; two readers of one box pulling at once take one copy from the
// publishers. Parts of chunks and strided rows (a dim-1 cut) are not offered: a later reader
// reads those from the publishers. Every element is checked.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "hub_test_util.hpp"
#include "tensorhub/core/box.hpp"

namespace tensorhub::test {
namespace {

const std::vector<std::int64_t> kGlobal{301, 67};  // bf16: 40,334 bytes, about 10 chunks

std::uint16_t at(std::int64_t i, std::int64_t j) { return static_cast<std::uint16_t>(i * 67 + j + 1); }
// A second global tensor's elements, so that the two cannot be mixed up.
std::uint16_t at_r(std::int64_t i, std::int64_t j) { return static_cast<std::uint16_t>(i * 131 + j * 3 + 7); }

std::vector<std::uint16_t> elements(const Box& b, std::uint16_t (*f)(std::int64_t, std::int64_t) = at) {
  std::vector<std::uint16_t> v;
  for (std::int64_t i = 0; i < b.extent[0]; ++i) {
    for (std::int64_t j = 0; j < b.extent[1]; ++j) v.push_back(f(b.offset[0] + i, b.offset[1] + j));
  }
  return v;
}

// One box destination of each global tensor, filled with zeros.
struct Boxes {
  std::vector<std::vector<std::uint16_t>> data;
  std::vector<Tensor> tensors;
  void add(const std::string& global, const Box& b) {
    data.emplace_back(static_cast<std::size_t>(volume(b)), 0);
    tensors.push_back(host_slice(global + "@" + std::to_string(b.offset[0]) + "," + std::to_string(b.offset[1]),
                                 DType::kBF16, b.extent, data.back().data(), global, kGlobal, b.offset));
  }
};

class ReshardRelay : public LocalHubsK1 {
 protected:
  // Four publishers of group "trainer": w cut along dim 0 and, with `row_parallel`, r cut along
  // dim 1 as well; version 1.
  void publish(bool row_parallel) {
    w_.resize(4);
    r_.resize(4);
    for (std::int64_t k = 0; k < 4; ++k) {
      auto& hub = *publishers_.emplace_back(&add_hub());
      const Box wb = split(kGlobal, 0, 4, k);
      const Box rb = split(kGlobal, 1, 4, k);
      w_[k] = elements(wb);
      r_[k] = elements(rb, at_r);
      std::vector<Tensor> ts{
          host_slice("w.tp" + std::to_string(k), DType::kBF16, wb.extent, w_[k].data(), "w", kGlobal, wb.offset)};
      if (row_parallel) {
        ts.push_back(
            host_slice("r.tp" + std::to_string(k), DType::kBF16, rb.extent, r_[k].data(), "r", kGlobal, rb.offset));
      }
      hub.publish("m", 1, ts, Group{"trainer", 4, static_cast<std::uint32_t>(k)});
    }
  }
  std::uint32_t holders() { return version_status("m", 1)->holders; }
  std::vector<HubCore*> publishers_;
  std::vector<std::vector<std::uint16_t>> w_, r_;
};

TEST_F(ReshardRelay, AColumnParallelBoxRelaysTheShardsItHoldsWhole) {
  publish(false);
  const Box half = split(kGlobal, 0, 2, 0);  // rows [0, 151): shards 0 and 1 whole
  auto& a = add_hub();
  Boxes da;
  da.add("w", half);
  const auto ra = a.pull("m", Version::exact(1), da.tensors, {});
  ASSERT_EQ(da.data[0], elements(half));
  EXPECT_EQ(ra.origin_bytes, da.data[0].size() * 2);
  EXPECT_EQ(ra.staged_bytes, 0u) << "whole shards land in place";
  EXPECT_EQ(holders(), 5u) << "a relays the two shards its box holds";

  auto& b = add_hub();
  Boxes db;
  db.add("w", half);
  const auto rb = b.pull("m", Version::exact(1), db.tensors, {});
  ASSERT_EQ(db.data[0], elements(half));
  EXPECT_EQ(rb.relay_bytes, rb.bytes) << "b reads all of its box from a (a relay before a publisher)";

  // The publishers of shards 0 and 1 leave: a TP=3 reader's box (rows [0, 101): shard 0 whole,
  // part of shard 1) is served by the relays alone, the part of shard 1 from whole chunks.
  publishers_[0]->unpublish("m", 1);
  publishers_[1]->unpublish("m", 1);
  auto& c = add_hub();
  Boxes dc;
  const Box third = split(kGlobal, 0, 3, 0);
  dc.add("w", third);
  PullOptions no_relay;
  no_relay.relay = false;
  const auto rc = c.pull("m", Version::exact(1), dc.tensors, no_relay);
  ASSERT_EQ(dc.data[0], elements(third));
  EXPECT_EQ(rc.origin_bytes, 0u);
  EXPECT_GE(rc.relay_bytes, dc.data[0].size() * 2);
  EXPECT_GT(rc.staged_bytes, 0u) << "the part of shard 1 comes in whole chunks, staged";
}

TEST_F(ReshardRelay, StridedBoxesAreNotOfferedTheWholeShardsOfTheSamePullAre) {
  publish(true);
  const Box wbox = split(kGlobal, 0, 2, 1);  // rows [151, 301): w's shards 2 and 3 whole
  const Box rbox = split(kGlobal, 1, 2, 1);  // columns of r's shards 2 and 3: strided rows
  auto& a = add_hub();
  Boxes da;
  da.add("w", wbox);
  da.add("r", rbox);
  a.pull("m", Version::exact(1), da.tensors, {});
  ASSERT_EQ(da.data[0], elements(wbox));
  ASSERT_EQ(da.data[1], elements(rbox, at_r));
  const auto held = holder("m", 1, a.worker());
  ASSERT_TRUE(held.has_value()) << "a relays w's shards";

  auto& b = add_hub();
  Boxes db;
  db.add("w", wbox);
  db.add("r", rbox);
  const auto rb = b.pull("m", Version::exact(1), db.tensors, {});
  ASSERT_EQ(db.data[0], elements(wbox));
  ASSERT_EQ(db.data[1], elements(rbox, at_r));
  EXPECT_EQ(rb.relay_bytes, db.data[0].size() * 2) << "w from the relay";
  EXPECT_EQ(rb.origin_bytes, db.data[1].size() * 2) << "r's strided rows from its publishers";

  // A pull of strided boxes alone offers nothing.
  auto& c = add_hub();
  Boxes dc;
  dc.add("r", split(kGlobal, 1, 2, 0));
  const auto before = holders();
  c.pull("m", Version::exact(1), dc.tensors, {});
  ASSERT_EQ(dc.data[0], elements(split(kGlobal, 1, 2, 0), at_r));
  EXPECT_EQ(holders(), before);
  EXPECT_FALSE(holder("m", 1, c.worker()).has_value());
}

TEST_F(ReshardRelay, TwoReadersOfOneBoxAtOnceTakeOneCopyFromThePublishers) {
  publish(false);
  const Box half = split(kGlobal, 0, 2, 0);
  auto& a = add_hub();
  auto& b = add_hub();
  Boxes da;
  Boxes db;
  da.add("w", half);
  db.add("w", half);
  auto ha = a.pull_async("m", Version::exact(1), da.tensors, {});
  auto hb = b.pull_async("m", Version::exact(1), db.tensors, {});
  const auto ra = ha.result();
  const auto rb = hb.result();
  ASSERT_EQ(da.data[0], elements(half));
  ASSERT_EQ(db.data[0], elements(half));
  EXPECT_TRUE(ra.planned && rb.planned);
  EXPECT_EQ(ra.origin_bytes + rb.origin_bytes, da.data[0].size() * 2) << "K = 1: one copy from the publishers";
  EXPECT_EQ(ra.relay_bytes + rb.relay_bytes, da.data[0].size() * 2);
}

}  // namespace
}  // namespace tensorhub::test
