// Regressions of hub bugs, MPI-free (HubCore over the `local` transport, one coordinator):
//  * names are validated before anything is sent (bug 9);
//  * every call after close() throws HubClosed, close() twice is a no-op (bug 6);
//  * a relay stops before its memory is reused: stop_relaying (bug 5);
//  * a rank pulls a version it published or already relays, and one version in two calls into
//    different buffers (bug 4).
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>

#include "hub_test_util.hpp"

namespace tensorhub::test {
namespace {

using namespace std::chrono_literals;

constexpr std::uint64_t kBytes = 2 * kChunk + 256;

TEST_F(LocalHubs, BadNamesAreRejectedBeforeAnythingIsSent) {
  auto& hub = add_hub();
  Buffers b(1, kBytes);
  b.fill(1);
  const std::string bad = "model\xff";
  const auto before = client_.calls();
  try {
    hub.pull(bad, Version::latest(), b.tensors, {});
    ADD_FAILURE() << "pull of a non-UTF-8 model name";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("model name is not valid UTF-8"), std::string::npos) << e.what();
  }
  EXPECT_THROW(hub.publish(bad, 1, b.tensors, std::nullopt), UserError);
  EXPECT_THROW(hub.latest(bad), UserError);
  EXPECT_THROW(hub.retain(bad, 1), UserError);
  EXPECT_THROW(hub.release(bad, 1), UserError);
  EXPECT_THROW(hub.unpublish(bad, 1), UserError);
  EXPECT_THROW(hub.manifest(bad, Version::latest()), UserError);
  EXPECT_THROW(hub.wait_for(bad, std::nullopt, 1ms), UserError);
  Tensor ctl = b.tensors[0];
  ctl.spec.name = "w\n";
  EXPECT_THROW(hub.publish("m", 1, std::span<const Tensor>(&ctl, 1), std::nullopt), UserError);
  EXPECT_THROW(hub.pull("m", Version::latest(), std::span<const Tensor>(&ctl, 1), {}), UserError);
  PullOptions po;
  po.group = Group{"g\xc3", 1, 0};
  EXPECT_THROW(hub.pull("m", Version::latest(), b.tensors, po), UserError);
  EXPECT_THROW(hub.publish("m", 1, b.tensors, Group{"", 1, 0}), UserError);
  EXPECT_THROW(hub.publish("m", 1, b.tensors, Group{"g", 2, 2}), UserError);  // rank out of range
  po.group = Group{"g", 2, 2};
  EXPECT_THROW(hub.pull("m", Version::latest(), b.tensors, po), UserError);
  EXPECT_EQ(client_.calls(), before) << "a bad name reached the coordinator";
  EXPECT_TRUE(coordinator_.status().empty());
}

TEST_F(LocalHubs, EveryCallAfterCloseThrowsHubClosed) {
  auto& hub = add_hub();
  Buffers b(1, kBytes);
  b.fill(1);
  hub.publish("m", 1, b.tensors, std::nullopt);
  hub.close();
  EXPECT_FALSE(holder("m", 1, hub.worker())) << "close withdraws what the hub served";
  hub.close();  // no-op
  const auto before = client_.calls();
  try {
    hub.pull("m", Version::latest(), b.tensors, {});
    ADD_FAILURE() << "pull after close";
  } catch (const HubClosed& e) {
    EXPECT_STREQ(e.what(), "hub is closed: pull called after Hub::close()");
  }
  EXPECT_THROW(hub.publish("m", 2, b.tensors, std::nullopt), HubClosed);
  EXPECT_THROW(hub.unpublish("m", 1), HubClosed);
  EXPECT_THROW(hub.retain("m", 1), HubClosed);
  EXPECT_THROW(hub.release("m", 1), HubClosed);
  EXPECT_THROW(hub.attach_snapshot("/nonexistent.h5"), HubClosed);
  EXPECT_THROW(hub.latest("m"), HubClosed);
  EXPECT_THROW(hub.wait_for("m", std::nullopt, 1ms), HubClosed);
  EXPECT_THROW(hub.manifest("m", Version::latest()), HubClosed);
  EXPECT_THROW(hub.status(), HubClosed);
  EXPECT_THROW(hub.allocate(4096), HubClosed);
  EXPECT_THROW(hub.deallocate(b.data[0].data()), HubClosed);
  EXPECT_THROW(hub.stop_relaying(b.tensors), HubClosed);
  EXPECT_EQ(client_.calls(), before);
}

TEST_F(LocalHubs, EveryCallAfterAbandonThrowsHubClosed) {
  auto& hub = add_hub();
  hub.abandon();
  Buffers b(1, kBytes);
  EXPECT_THROW(hub.pull("m", Version::latest(), b.tensors, {}), HubClosed);
  EXPECT_THROW(hub.latest("m"), HubClosed);
  hub.close();  // no-op after abandon
}

TEST_F(LocalHubsK1, StopRelayingBeforeReusingBuffers) {
  auto& pub = add_hub();
  auto& a = add_hub();
  auto& b = add_hub();
  Buffers src(2, kBytes);
  src.fill(3);
  pub.publish("m", 3, src.tensors, std::nullopt);
  Buffers da(2, kBytes);
  a.pull("m", Version::latest(), da.tensors, {});
  ASSERT_TRUE(holder("m", 3, a.worker()));
  a.stop_relaying(da.tensors);
  EXPECT_FALSE(holder("m", 3, a.worker()));
  da.fill(77);  // reused for something else
  Buffers db(2, kBytes);
  PullOptions unverified;
  unverified.verify = false;
  unverified.relay = false;
  b.pull("m", Version::latest(), db.tensors, unverified);
  EXPECT_EQ(db.mismatches(3), 0u) << "b read a's reused buffers";
  a.stop_relaying(da.tensors);  // relaying nothing there: fine
  EXPECT_THROW(pub.stop_relaying(src.tensors), UserError) << "published memory";
}

TEST_F(LocalHubs, RankPullsWhatItPublished) {
  auto& hub = add_hub();  // single process: the publisher is the only holder
  Buffers src(2, kBytes);
  src.fill(1);
  hub.publish("m", 1, src.tensors, std::nullopt);
  Buffers dst(2, kBytes);
  const auto r = hub.pull("m", Version::latest(), dst.tensors, {});
  EXPECT_EQ(r.version, 1u);
  EXPECT_EQ(r.bytes, 2 * kBytes);
  EXPECT_EQ(r.local_bytes, r.bytes);
  EXPECT_EQ(dst.mismatches(1), 0u);
  const auto h = holder("m", 1, hub.worker());
  ASSERT_TRUE(h);
  EXPECT_TRUE(h->origin) << "the copy is not offered as a relay";
  // Verified: memory changed behind a published reference is caught.
  src.data[1][0] ^= 1;
  EXPECT_THROW(hub.pull("m", Version::latest(), dst.tensors, {}), ChecksumError);
  src.data[1][0] ^= 1;
  hub.unpublish("m", 1);
}

TEST_F(LocalHubs, ColocatedTrainerAndRolloutPullTheWholeVersion) {
  auto& x = add_hub();
  auto& y = add_hub();
  Buffers sx(2, kBytes, "a");
  Buffers sy(2, kBytes, "b");
  sx.fill(5);
  sy.fill(6);
  x.publish("m", 1, sx.tensors, Group{"trainer", 2, 0});
  y.publish("m", 1, sy.tensors, Group{"trainer", 2, 1});
  for (auto* h : {&x, &y}) {
    Buffers da(2, kBytes, "a");
    Buffers dbuf(2, kBytes, "b");
    std::vector<Tensor> all = da.tensors;
    all.insert(all.end(), dbuf.tensors.begin(), dbuf.tensors.end());
    const auto r = h->pull("m", Version::latest(), all, {});
    EXPECT_EQ(r.bytes, 4 * kBytes);
    EXPECT_EQ(r.local_bytes, 2 * kBytes);
    EXPECT_EQ(da.mismatches(5), 0u);
    EXPECT_EQ(dbuf.mismatches(6), 0u);
  }
  EXPECT_EQ(version_status("m", 1)->holders, 2u) << "publishers relay nothing of their own version";
  x.unpublish("m", 1);
  y.unpublish("m", 1);
}

TEST_F(LocalHubsK1, OneVersionInTwoCallsIntoDifferentBuffers) {
  auto& pub = add_hub();
  auto& a = add_hub();
  auto& b = add_hub();
  Buffers src(2, kBytes);
  src.fill(8);
  pub.publish("m", 8, src.tensors, std::nullopt);
  Buffers first(2, kBytes);
  Buffers second(2, kBytes);
  EXPECT_EQ(a.pull("m", Version::exact(8), first.only(0), {}).origin_bytes, kBytes);
  EXPECT_EQ(a.pull("m", Version::exact(8), second.only(1), {}).origin_bytes, kBytes);
  // A third call for a tensor it relays already: a local copy.
  Buffers third(2, kBytes);
  const auto r3 = a.pull("m", Version::exact(8), third.only(0), {});
  EXPECT_EQ(r3.local_bytes, kBytes);
  EXPECT_EQ(first.mismatches_of(0, 8, 0) + second.mismatches_of(1, 8, 1) + third.mismatches_of(0, 8, 0), 0u);
  // a relays both tensors, from the buffers of its two calls.
  Buffers db(2, kBytes);
  const auto rb = b.pull("m", Version::exact(8), db.tensors, {});
  EXPECT_EQ(rb.relay_bytes, 2 * kBytes);
  EXPECT_EQ(db.mismatches(8), 0u);
  b.stop_relaying(db.tensors);

  // Reusing one of a's buffers withdraws its holder: neither buffer is served any more.
  a.stop_relaying(first.only(0));
  EXPECT_FALSE(holder("m", 8, a.worker()));
  first.fill(66);
  second.fill(66);
  auto& c = add_hub();
  Buffers dc(2, kBytes);
  PullOptions unverified;
  unverified.verify = false;
  c.pull("m", Version::exact(8), dc.tensors, unverified);
  EXPECT_EQ(dc.mismatches(8), 0u);
  // Nor does a copy its own reused buffers: both of its references went.
  Buffers again(2, kBytes);
  const auto ra = a.pull("m", Version::exact(8), again.only(1), unverified);
  EXPECT_EQ(ra.local_bytes, 0u);
  EXPECT_EQ(again.mismatches_of(1, 8, 1), 0u);
}

}  // namespace
}  // namespace tensorhub::test
