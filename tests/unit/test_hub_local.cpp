// HubCore without MPI: several hubs in one process over the `local` transport (each its own
// LocalTransport) around one in-process coordinator. Publish -> pull -> relay chains, unpublish
// waiting for its readers, retain and offload to a snapshot, group pulls, bad input.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <future>
#include <thread>

#include "hub_test_util.hpp"

namespace tensorhub::test {
namespace {

using namespace std::chrono_literals;

constexpr std::uint64_t kBytes = 3 * kChunk + 512;  // 4 chunks, the last partial

TEST_F(LocalHubsK1, PublishPullRelayChain) {
  auto& pub = add_hub();
  auto& a = add_hub();
  auto& b = add_hub();
  Buffers src(2, kBytes);
  src.fill(1);
  pub.publish("m", 1, src.tensors, std::nullopt);

  Buffers da(2, kBytes);
  const auto ra = a.pull("m", Version::latest(), da.tensors, {});
  EXPECT_EQ(ra.version, 1u);
  EXPECT_EQ(ra.bytes, 2 * kBytes);
  EXPECT_EQ(ra.origin_bytes, ra.bytes);
  EXPECT_EQ(da.mismatches(1), 0u);

  Buffers db(2, kBytes);
  const auto rb = b.pull("m", Version::exact(1), db.tensors, {});
  EXPECT_EQ(db.mismatches(1), 0u);
  EXPECT_EQ(rb.relay_bytes, rb.bytes) << "b should read everything from a (a relay before a publisher)";

  // The relay holds everything: a third reader is served without the publisher.
  auto& c = add_hub();
  pub.unpublish("m", 1);
  Buffers dc(2, kBytes);
  const auto rc = c.pull("m", Version::latest(), dc.tensors, {});
  EXPECT_EQ(dc.mismatches(1), 0u);
  EXPECT_EQ(rc.origin_bytes, 0u);
}

TEST_F(LocalHubs, PartialPullAndNoRelay) {
  auto& pub = add_hub();
  auto& a = add_hub();
  Buffers src(3, kBytes);
  src.fill(2);
  pub.publish("m", 2, src.tensors, std::nullopt);
  Buffers dst(3, kBytes);
  PullOptions po;
  po.relay = false;
  const auto r = a.pull("m", Version::latest(), dst.only(1), po);
  EXPECT_EQ(r.bytes, kBytes);
  EXPECT_EQ(dst.mismatches_of(1, 2, 1), 0u);
  EXPECT_FALSE(holder("m", 2, a.worker())) << "relay = false offers nothing";
}

TEST_F(LocalHubs, UnpublishWaitsForReadsInFlight) {
  auto& pub = add_hub();
  Buffers src(1, kBytes);
  src.fill(3);
  pub.publish("m", 3, src.tensors, std::nullopt);
  // A fake reader pins the publisher with an assigned read it has not completed.
  coord::WorkerInfo info;
  info.endpoint = "local:fake";
  info.transport = "local";
  const auto reader = coordinator_.register_worker(info);
  const coord::Group g{"fake", 1, 0};
  coordinator_.resolve(coord::ResolveRequest{reader, "m", 3, g, 1});
  const auto acq = coordinator_.acquire(coord::AcquireRequest{reader, "m", 3, {0}, 1});
  ASSERT_EQ(acq.assignments.size(), 1u);

  auto done = std::async(std::launch::async, [&] { pub.unpublish("m", 3); });
  // Once the reference is withdrawn, unpublish can only return after the read completes.
  for (;;) {
    const auto h = holder("m", 3, pub.worker());
    ASSERT_TRUE(h.has_value());
    if (h->withdrawn) break;
    std::this_thread::yield();
  }
  EXPECT_EQ(done.wait_for(0s), std::future_status::timeout) << "unpublish returned with a read in flight";
  coordinator_.complete(coord::CompleteRequest{reader, "m", 3, {{0, pub.worker(), true}}, {}, {}, {}});
  coordinator_.finish(coord::FinishRequest{reader, "m", 3, g, 1});
  done.get();
  EXPECT_FALSE(holder("m", 3, pub.worker()));
}

TEST_F(LocalHubs, RetainedLastHolderMustOffload) {
  auto& pub = add_hub();
  Buffers src(1, kBytes);
  src.fill(4);
  pub.publish("m", 4, src.tensors, std::nullopt);
  pub.retain("m", 4);
  EXPECT_THROW(pub.unpublish("m", 4), OffloadRequired);  // no snapshot dir
  ASSERT_TRUE(holder("m", 4, pub.worker()));
  EXPECT_FALSE(holder("m", 4, pub.worker())->withdrawn) << "a refused unpublish changes nothing";
  pub.release("m", 4);
  pub.unpublish("m", 4);
  EXPECT_FALSE(version_status("m", 4));
}

TEST_F(LocalHubs, RetainedVersionIsOffloadedToSnapshot) {
  namespace fs = std::filesystem;
  std::string templ = (fs::temp_directory_path() / "tensorhub-hub-local-XXXXXX").string();
  ASSERT_NE(mkdtemp(templ.data()), nullptr);
  HubOptions o = small_chunks();
  o.snapshot_dir = templ;
  auto& pub = add_hub(o);
  auto& reader = add_hub();
  Buffers src(2, kBytes);
  src.fill(5);
  pub.publish("m", 5, src.tensors, std::nullopt);
  pub.retain("m", 5);
  pub.unpublish("m", 5);  // last holder: writes <dir>/m/v5.h5 and attaches it
  EXPECT_TRUE(fs::exists(fs::path(templ) / "m" / "v5.h5"));
  src.fill(99);  // the memory is ours again
  Buffers dst(2, kBytes);
  const auto r = reader.pull("m", Version::exact(5), dst.tensors, {});
  EXPECT_EQ(r.file_bytes, 2 * kBytes);
  EXPECT_EQ(dst.mismatches(5), 0u);
  reader.release("m", 5);
  fs::remove_all(templ);
}

TEST_F(LocalHubs, GroupResolvesOneVersionForAllRanks) {
  auto& pub = add_hub();
  auto& r0 = add_hub();
  auto& r1 = add_hub();
  Buffers v1(2, kBytes);
  v1.fill(1);
  pub.publish("m", 1, v1.tensors, std::nullopt);
  PullOptions p0;
  p0.group = Group{"tp", 2, 0};
  PullOptions p1;
  p1.group = Group{"tp", 2, 1};
  Buffers d0(2, kBytes);
  Buffers d1(2, kBytes);
  EXPECT_EQ(r0.pull("m", Version::latest(), d0.only(0), p0).version, 1u);
  // A newer version appears between the two ranks' pulls: the group still gets v1.
  Buffers v2(2, kBytes);
  v2.fill(2);
  pub.publish("m", 2, v2.tensors, std::nullopt);
  EXPECT_EQ(r1.pull("m", Version::latest(), d1.only(1), p1).version, 1u);
  EXPECT_EQ(d0.mismatches_of(0, 1, 0), 0u);
  EXPECT_EQ(d1.mismatches_of(1, 1, 1), 0u);
  PullOptions bad = p0;
  bad.group->rank = 2;
  EXPECT_THROW(r0.pull("m", Version::latest(), d0.tensors, bad), UserError);
}

TEST_F(LocalHubs, BadInputIsRejectedAndHubStaysUsable) {
  auto& pub = add_hub();
  auto& reader = add_hub();
  Buffers src(2, kBytes);
  src.fill(1);
  pub.publish("m", 1, src.tensors, std::nullopt);
  EXPECT_THROW(pub.publish("m", 1, src.tensors, std::nullopt), UserError);  // twice
  EXPECT_THROW(pub.unpublish("m", 9), NotFoundError);
  EXPECT_THROW(pub.unpublish("other", 1), NotFoundError);
  Buffers reused(1, kBytes, "x");
  EXPECT_THROW(pub.pull("m", Version::latest(), std::span<const Tensor>(src.tensors.data(), 1), {}), UserError)
      << "pulling into published memory";

  Buffers dst(2, kBytes);
  EXPECT_THROW(reader.pull("nope", Version::latest(), dst.tensors, {}), NotFoundError);
  EXPECT_THROW(reader.pull("m", Version::exact(7), dst.tensors, {}), NotFoundError);
  EXPECT_THROW(reader.pull("m", Version::latest(), reused.tensors, {}), NotFoundError);  // unknown tensor
  Tensor wrong = dst.tensors[0];
  wrong.spec.shape = {2, static_cast<std::int64_t>(kBytes / 8)};
  EXPECT_THROW(reader.pull("m", Version::latest(), std::span<const Tensor>(&wrong, 1), {}), UserError);
  Tensor small = dst.tensors[0];
  small.bytes = 100;
  EXPECT_THROW(reader.pull("m", Version::latest(), std::span<const Tensor>(&small, 1), {}), UserError);
  std::vector<Tensor> twice{dst.tensors[0], dst.tensors[0]};
  EXPECT_THROW(reader.pull("m", Version::latest(), twice, {}), UserError);
  EXPECT_THROW(reader.pull("m", Version::latest(), {}, {}), UserError);
  // Still intact, and no pin was left behind.
  EXPECT_EQ(reader.pull("m", Version::latest(), dst.tensors, {}).version, 1u);
  EXPECT_EQ(dst.mismatches(1), 0u);
  EXPECT_EQ(version_status("m", 1)->pins, 0u);
}

TEST_F(LocalHubs, StatusAndManifest) {
  auto& pub = add_hub();
  Buffers src(2, kBytes);
  src.fill(1);
  pub.publish("m", 1, src.tensors, std::nullopt);
  EXPECT_EQ(pub.latest("m"), 1u);
  EXPECT_EQ(pub.wait_for("m", std::nullopt, 1s), 1u);
  const auto m = pub.manifest("m", Version::latest());
  EXPECT_EQ(m.version, 1u);
  EXPECT_EQ(m.tensors.size(), 2u);
  const auto st = pub.status();
  ASSERT_EQ(st.size(), 1u);
  EXPECT_EQ(st[0].versions.at(0).origin_holders, 1u);
}

// The coordinator's clock is the test's: jumping it past the lease declares every worker dead.
class LocalHubsLease : public LocalHubs {
 protected:
  LocalHubsLease() : LocalHubs(config(offset_)) {}
  static coord::CoordinatorConfig config(std::atomic<std::int64_t>& offset) {
    coord::CoordinatorConfig c;
    c.lease = 1000ms;
    c.clock = [&offset] { return std::chrono::steady_clock::now() + std::chrono::milliseconds(offset.load()); };
    return c;
  }
  static inline std::atomic<std::int64_t> offset_{0};
};

TEST_F(LocalHubsLease, LostRegistrationIsRebuilt) {
  auto& pub = add_hub();
  auto& reader = add_hub();
  Buffers src(1, kBytes);
  src.fill(6);
  pub.publish("m", 6, src.tensors, std::nullopt);
  const auto before = pub.worker();
  offset_ += 60000;  // every worker's lease expires: the coordinator forgets them and v6
  // The publisher's heartbeat thread notices, registers again (a new id) and re-publishes; the
  // reader re-registers on its next call.
  while (pub.worker() == before || !coordinator_.latest("m")) std::this_thread::sleep_for(1ms);
  Buffers dst(1, kBytes);
  EXPECT_EQ(reader.pull("m", Version::latest(), dst.tensors, {}).version, 6u);
  EXPECT_EQ(dst.mismatches(6), 0u);
}

}  // namespace
}  // namespace tensorhub::test
