// HubCore::publish_async without MPI (local transport, in-process coordinator): the call returns
// before the coordinator has the shard (its publish held at a Gate), the version becomes visible
// and readable when the handle is ready, the memory is guarded from the call on (pull into it, a
// second publish of the version), unpublish of a publish still in flight (waits for its commit,
// or cancels it while it hashes: 1 GiB on one thread), cancel(), errors from the coordinator reported by the handle,
// close() with a publish hashing, and what the synchronous publish returns.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "hub_test_util.hpp"

namespace tensorhub::test {
namespace {

using namespace std::chrono_literals;

constexpr std::uint64_t kBytes = 16 * kChunk;
// Large enough that a cancel made right after publish_async returns lands while it still hashes
// (1 GiB in 4 KiB chunks on one thread: 0.1 s or more; checked before every chunk).
constexpr std::uint64_t kLarge = 1ull << 30;

HubOptions one_hash_thread() {
  auto o = small_chunks();
  o.hash_threads = 1;
  return o;
}

TEST_F(LocalHubs, PublishAsyncReturnsBeforeTheCoordinatorHasTheShard) {
  auto& pub = add_hub();
  auto& reader = add_hub();
  Buffers src(3, kBytes);
  src.fill(1);
  client_.publish_gate.close();
  auto h = pub.publish_async("m", 1, src.tensors, std::nullopt);
  client_.publish_gate.await_waiting(1);  // hashed; its coordinator call is held
  EXPECT_FALSE(h.ready());
  EXPECT_FALSE(h.wait(20ms));
  EXPECT_FALSE(reader.latest("m").has_value()) << "visible before the coordinator has the shard";
  client_.publish_gate.open();
  const auto r = h.result();
  EXPECT_TRUE(r.committed);
  EXPECT_EQ(r.bytes, 3 * kBytes);
  EXPECT_GE(r.commit, r.hashed);
  EXPECT_GE(r.hashed, r.call);
  EXPECT_EQ(reader.latest("m"), 1u);
  Buffers dst(3, kBytes);
  reader.pull("m", Version::exact(1), dst.tensors, {});
  EXPECT_EQ(dst.mismatches(1), 0u);
  pub.unpublish("m", 1);
}

TEST_F(LocalHubs, UnpublishWaitsForAPublishAlreadyAtTheCoordinator) {
  auto& pub = add_hub();
  Buffers src(2, kBytes);
  src.fill(1);
  client_.publish_gate.close();
  auto h = pub.publish_async("m", 1, src.tensors, std::nullopt);
  client_.publish_gate.await_waiting(1);
  std::thread opener([&] {
    std::this_thread::sleep_for(50ms);
    client_.publish_gate.open();
  });
  pub.unpublish("m", 1);  // waits for the commit, then withdraws the version
  opener.join();
  const auto r = h.result();
  EXPECT_TRUE(r.committed);
  const auto vs = version_status("m", 1);
  EXPECT_TRUE(!vs || vs->holders == 0) << "unpublish must withdraw what the publish registered";
  EXPECT_FALSE(pub.latest("m").has_value());
  EXPECT_THROW(pub.unpublish("m", 1), NotFoundError);
}

TEST_F(LocalHubs, UnpublishCancelsAPublishStillHashing) {
  auto& pub = add_hub(one_hash_thread());
  Buffers big(1, kLarge);
  auto h = pub.publish_async("m", 1, big.tensors, std::nullopt);
  // Published from the call on (hashing or not): its memory is guarded, the version taken here.
  Buffers other(1, kBytes);
  EXPECT_THROW(pub.publish("m", 1, other.tensors, std::nullopt), UserError);
  EXPECT_THROW(pub.pull("m", Version::exact(1), big.tensors, {}), UserError);
  pub.unpublish("m", 1);  // the tensor is the caller's again when this returns
  EXPECT_THROW(h.result(), Cancelled);
  EXPECT_FALSE(pub.latest("m").has_value());
  EXPECT_FALSE(version_status("m", 1).has_value()) << "the coordinator must not have heard of it";
  // Nothing of it is left: the same memory publishes the version again.
  pub.publish("m", 1, big.tensors, std::nullopt);
  EXPECT_EQ(pub.latest("m"), 1u);
}

TEST_F(LocalHubs, CancelStopsTheChecksumPass) {
  auto& pub = add_hub(one_hash_thread());
  Buffers big(1, kLarge);
  auto h = pub.publish_async("m", 1, big.tensors, std::nullopt);
  h.cancel();
  EXPECT_TRUE(h.ready());
  EXPECT_THROW(h.result(), Cancelled);
  EXPECT_FALSE(version_status("m", 1).has_value());
  EXPECT_THROW(pub.unpublish("m", 1), NotFoundError);
  // cancel() of a publish that ended leaves it as it was.
  auto done = pub.publish_async("m", 2, big.tensors, std::nullopt);
  EXPECT_TRUE(done.result().committed);
  done.cancel();
  EXPECT_EQ(pub.latest("m"), 2u);
}

TEST_F(LocalHubs, ACoordinatorErrorEndsTheHandleAndReleasesTheMemory) {
  auto& a = add_hub();
  auto& b = add_hub();
  Buffers sa(1, kBytes);
  Buffers sb(1, kBytes);
  a.publish("m", 1, sa.tensors, std::nullopt);
  // v1 is another worker's one-shard version: b's shard of it is refused at the coordinator.
  auto h = b.publish_async("m", 1, sb.tensors, std::nullopt);
  EXPECT_THROW(h.result(), UserError);
  EXPECT_THROW(b.unpublish("m", 1), NotFoundError);
  b.publish("m", 2, sb.tensors, std::nullopt);  // the memory is free for another version
  EXPECT_EQ(b.latest("m"), 2u);
}

TEST_F(LocalHubs, DroppedHandlesStillPublish) {
  auto& pub = add_hub();
  auto& reader = add_hub();
  Buffers src(2, kBytes);
  src.fill(7);
  { static_cast<void>(pub.publish_async("m", 7, src.tensors, std::nullopt)); }
  ASSERT_EQ(reader.wait_for("m", std::nullopt, 5000ms), 7u);
  Buffers dst(2, kBytes);
  reader.pull("m", Version::exact(7), dst.tensors, {});
  EXPECT_EQ(dst.mismatches(7), 0u);
}

TEST_F(LocalHubs, CloseCancelsAPublishStillHashing) {
  auto& pub = add_hub(one_hash_thread());
  Buffers big(1, kLarge);
  auto h = pub.publish_async("m", 1, big.tensors, std::nullopt);
  pub.close();
  EXPECT_TRUE(h.ready());
  EXPECT_ANY_THROW(h.result());  // Cancelled, or HubClosed if it got as far as the commit
  EXPECT_FALSE(version_status("m", 1).has_value() && version_status("m", 1)->holders > 0);
}

TEST_F(LocalHubs, SynchronousPublishReportsItsWork) {
  auto o = small_chunks();
  o.hash_threads = 3;
  auto& pub = add_hub(o);
  Buffers src(4, kBytes);
  const auto r = pub.publish("m", 1, src.tensors, std::nullopt);
  EXPECT_TRUE(r.committed);
  EXPECT_EQ(r.bytes, 4 * kBytes);
  EXPECT_EQ(r.hash_threads, 3u);
  EXPECT_EQ(PublishHandle().valid(), false);
  EXPECT_THROW(static_cast<void>(PublishHandle().ready()), UserError);
}

}  // namespace
}  // namespace tensorhub::test
