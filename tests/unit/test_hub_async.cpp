// HubCore::pull_async without MPI: asynchronous pulls racing publish/unpublish (no torn read),
// several in flight, cancel mid-transfer (buffers untouched afterwards, pins released), deadlines
// of pull and unpublish, prefetch into a spare buffer set (the held set keeps relaying), a group
// prefetch where one member cancels. Slow reads come from HeldTransport: a LocalTransport whose
// reads land (memcpy) only when released and after a delay, from whichever thread polls.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <deque>
#include <thread>

#include "hub_test_util.hpp"
#include "tensorhub/transport/descriptor.hpp"

namespace tensorhub::test {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr std::uint64_t kBytes = 16 * kChunk;  // 16 chunks per tensor

struct HeldControl {
  std::atomic<bool> open{true};
  std::atomic<int> delay_ms{0};
  std::atomic<std::size_t> pending{0};  // posted, not landed
};

class HeldTransport final : public transport::Transport {
 public:
  HeldTransport(std::string name, std::shared_ptr<HeldControl> c) : inner_(std::move(name)), c_(std::move(c)) {}
  std::string_view name() const override { return "local"; }
  const std::string& endpoint() const override { return inner_.endpoint(); }
  bool reaches(std::string_view e) const override { return inner_.reaches(e); }
  std::unique_ptr<transport::Exposure> expose(std::span<const transport::MemoryRange> r) override {
    return inner_.expose(r);
  }
  void post(const transport::ReadOp& op) override {
    ops_.push_back({op, Clock::now() + std::chrono::milliseconds(c_->delay_ms.load())});
    ++c_->pending;
  }
  void poll(std::vector<transport::Completion>& out) override {
    while (!ops_.empty() && c_->open.load() && Clock::now() >= ops_.front().due) {
      const auto& op = ops_.front().op;
      const auto r = transport::decode_region(op.descriptor);
      std::memcpy(op.dst, reinterpret_cast<const unsigned char*>(r.address) + op.offset, op.length);
      out.push_back(transport::Completion{op.tag, true, {}});
      ops_.pop_front();
      --c_->pending;
    }
  }
  std::size_t in_flight() const override { return ops_.size(); }

 private:
  struct Op {
    transport::ReadOp op;
    Clock::time_point due;
  };
  transport::LocalTransport inner_;
  std::shared_ptr<HeldControl> c_;
  std::deque<Op> ops_;
};

class AsyncHubs : public LocalHubs {
 protected:
  HubCore& add_held_hub(const std::shared_ptr<HeldControl>& c, HubOptions o = small_chunks()) {
    const auto rank = static_cast<int>(hubs_.size());
    const auto name = "held" + std::to_string(rank);
    hubs_.push_back(std::make_unique<HubCore>(client_, std::make_unique<HeldTransport>(name, c), rank, std::move(o)));
    return *hubs_.back();
  }
  static void wait_until(const std::function<bool()>& f) {
    while (!f()) std::this_thread::sleep_for(1ms);
  }
};

TEST_F(AsyncHubs, AsyncPullDeliversAndSeveralRunAtOnce) {
  auto& pub = add_hub();
  auto& reader = add_hub();
  Buffers a(2, kBytes, "a");
  Buffers b(2, kBytes, "b");
  a.fill(1);
  b.fill(2);
  pub.publish("ma", 1, a.tensors, std::nullopt);
  pub.publish("mb", 2, b.tensors, std::nullopt);
  Buffers da(2, kBytes, "a");
  Buffers db(2, kBytes, "b");
  Buffers da2(2, kBytes, "a");
  auto ha = reader.pull_async("ma", Version::latest(), da.tensors, {});
  auto hb = reader.pull_async("mb", Version::latest(), db.tensors, {});
  auto ha2 = reader.pull_async("ma", Version::exact(1), da2.tensors, {});  // same model, other buffers
  EXPECT_EQ(ha.result().version, 1u);
  EXPECT_EQ(hb.result().version, 2u);
  EXPECT_EQ(ha2.result().bytes, 2 * kBytes);
  EXPECT_TRUE(ha.ready());
  EXPECT_EQ(ha.progress().done, ha.progress().total);
  EXPECT_EQ(da.mismatches(1), 0u);
  EXPECT_EQ(db.mismatches(2), 0u);
  EXPECT_EQ(da2.mismatches(1), 0u);
  EXPECT_THROW(PullHandle().ready(), UserError);
}

TEST_F(AsyncHubs, OverlappingDestinationsAreRejected) {
  auto c = std::make_shared<HeldControl>();
  auto& pub = add_hub();
  auto& reader = add_held_hub(c);
  Buffers src(1, kBytes);
  src.fill(1);
  pub.publish("m", 1, src.tensors, std::nullopt);
  c->open = false;
  Buffers dst(1, kBytes);
  auto h = reader.pull_async("m", Version::latest(), dst.tensors, {});
  EXPECT_THROW(reader.pull_async("m", Version::latest(), dst.tensors, {}), UserError);
  EXPECT_THROW(reader.stop_relaying(dst.tensors), UserError);
  EXPECT_FALSE(h.wait(1ms));
  c->open = true;
  EXPECT_EQ(h.result().version, 1u);
  EXPECT_EQ(dst.mismatches(1), 0u);
}

TEST_F(AsyncHubs, CancelMidTransferLeavesBuffersAloneAndReleasesPins) {
  auto c = std::make_shared<HeldControl>();
  c->delay_ms = 50;  // 64 chunks, 8 in flight: >= 400 ms, cancelled after the first ones land
  auto& pub = add_hub();
  auto& reader = add_held_hub(c);
  Buffers src(4, kBytes);
  src.fill(1);
  pub.publish("m", 1, src.tensors, std::nullopt);
  Buffers dst(4, kBytes);
  auto h = reader.pull_async("m", Version::latest(), dst.tensors, {});
  wait_until([&] { return h.progress().done > 0 || h.ready(); });
  h.cancel();
  ASSERT_TRUE(h.ready());
  EXPECT_THROW(h.result(), Cancelled);
  EXPECT_LT(h.progress().done, h.progress().total) << "the pull was not in flight";
  for (auto& t : dst.data) std::fill(t.begin(), t.end(), 0xabababababababab);
  EXPECT_EQ(c->pending.load(), 0u) << "a read of the cancelled pull is still in flight";
  std::this_thread::sleep_for(250ms);  // 5 read delays: a straggler would have landed
  for (const auto& t : dst.data) {
    EXPECT_TRUE(std::all_of(t.begin(), t.end(), [](std::uint64_t w) { return w == 0xabababababababab; }));
  }
  // Nothing is relayed from the buffers, no pin is left: the publisher's unpublish returns.
  EXPECT_FALSE(holder("m", 1, reader.worker()).has_value());
  EXPECT_NO_THROW(pub.unpublish("m", 1, 5000ms));
}

TEST_F(AsyncHubs, DeadlinesAreHonoured) {
  auto c = std::make_shared<HeldControl>();
  auto& pub = add_hub();
  auto& reader = add_held_hub(c);
  Buffers src(1, kBytes);
  src.fill(1);
  pub.publish("m", 1, src.tensors, std::nullopt);
  c->delay_ms = 50;  // 16 chunks, 8 in flight: >= 100 ms
  PullOptions po;
  po.deadline = 30ms;
  Buffers dst(1, kBytes);
  EXPECT_THROW(reader.pull("m", Version::latest(), dst.tensors, po), TimeoutError);
  auto h = reader.pull_async("m", Version::latest(), dst.tensors, po);
  EXPECT_THROW(h.result(), TimeoutError);
  po.deadline = std::chrono::milliseconds(0);
  EXPECT_THROW(reader.pull_async("m", Version::latest(), dst.tensors, po), UserError);

  // unpublish with a timeout while reads of it are held in flight: TimeoutError, then again.
  c->delay_ms = 0;
  c->open = false;
  Buffers dst2(1, kBytes, "w");
  auto h2 = reader.pull_async("m", Version::latest(), dst2.tensors, {});
  wait_until([&] { return c->pending.load() > 0; });
  EXPECT_THROW(pub.unpublish("m", 1, 50ms), TimeoutError);
  c->open = true;
  try {
    h2.result();  // whatever it got (the publisher withdrew): it ends
  } catch (const Error&) {
  }
  reader.stop_relaying(dst2.tensors);
  EXPECT_NO_THROW(pub.unpublish("m", 1, 5000ms));
}

TEST_F(AsyncHubs, PrefetchKeepsRelayingTheHeldSet) {
  auto c = std::make_shared<HeldControl>();
  auto& pub = add_hub();
  auto& rollout = add_held_hub(c);
  Buffers v1(2, kBytes);
  Buffers v2(2, kBytes);
  v1.fill(1);
  v2.fill(2);
  pub.publish("m", 1, v1.tensors, std::nullopt);
  Buffers set_a(2, kBytes);
  Buffers set_b(2, kBytes);
  ASSERT_EQ(rollout.pull("m", Version::latest(), set_a.tensors, {}).version, 1u);
  pub.publish("m", 2, v2.tensors, std::nullopt);
  c->open = false;  // set B fills slowly
  auto next = rollout.pull_async("m", Version::latest(), set_b.tensors, {});
  wait_until([&] { return c->pending.load() > 0; });
  const auto h = holder("m", 1, rollout.worker());
  ASSERT_TRUE(h.has_value());
  EXPECT_FALSE(h->withdrawn) << "set A's relay was withdrawn while set B fills";
  // A newcomer of v1 is served by the rollout, not the trainer (which no longer has it).
  pub.unpublish("m", 1);
  auto& newcomer = add_hub();
  Buffers dn(2, kBytes);
  const auto rn = newcomer.pull("m", Version::exact(1), dn.tensors, {});
  EXPECT_EQ(rn.origin_bytes, 0u);
  EXPECT_EQ(dn.mismatches(1), 0u);
  c->open = true;
  EXPECT_EQ(next.result().version, 2u);
  EXPECT_EQ(set_b.mismatches(2), 0u);
  EXPECT_EQ(set_a.mismatches(1), 0u);
}

TEST_F(AsyncHubs, GroupPrefetchWhereOneMemberCancels) {
  auto c = std::make_shared<HeldControl>();
  c->delay_ms = 5;
  auto& pub = add_hub();
  auto& r0 = add_hub();
  auto& r1 = add_held_hub(c);
  Buffers v1(2, kBytes);
  v1.fill(1);
  pub.publish("m", 1, v1.tensors, std::nullopt);
  PullOptions p0;
  p0.group = Group{"tp", 2, 0};
  PullOptions p1;
  p1.group = Group{"tp", 2, 1};
  Buffers d0(2, kBytes);
  Buffers d1(2, kBytes);
  auto h0 = r0.pull_async("m", Version::latest(), d0.only(0), p0);
  auto h1 = r1.pull_async("m", Version::latest(), d1.only(1), p1);
  h1.cancel();
  EXPECT_EQ(h0.result().version, 1u);
  EXPECT_EQ(d0.mismatches_of(0, 1, 0), 0u);
  // The group's next prefetch still agrees on one version.
  Buffers v2(2, kBytes);
  v2.fill(2);
  pub.publish("m", 2, v2.tensors, std::nullopt);
  auto g0 = r0.pull_async("m", Version::latest(), d0.only(1), p0);
  Buffers v3(2, kBytes);
  v3.fill(3);
  pub.publish("m", 3, v3.tensors, std::nullopt);
  auto g1 = r1.pull_async("m", Version::latest(), d1.only(0), p1);
  const auto version = g0.result().version;
  EXPECT_EQ(g1.result().version, version);
  EXPECT_EQ(d1.mismatches_of(0, version, 0), 0u);
  EXPECT_EQ(d0.mismatches_of(1, version, 1), 0u);
  EXPECT_NO_THROW(pub.unpublish("m", 1, 5000ms)) << "the cancelled member left a pin";
}

// Async pulls of latest into two buffer sets per reader while the publisher cycles its two
// buffers (unpublish, refill, publish): every pulled set holds exactly its version.
TEST_F(AsyncHubs, AsyncPullsRacingPublishAndUnpublishReadNothingTorn) {
  auto& pub = add_hub();
  constexpr std::uint64_t kVersions = 30;
  std::vector<Buffers> trainer;
  trainer.emplace_back(2, kBytes);
  trainer.emplace_back(2, kBytes);
  trainer[1].fill(1);
  pub.publish("m", 1, trainer[1].tensors, std::nullopt);
  std::vector<HubCore*> readers{&add_hub(), &add_hub()};
  std::atomic<bool> stop{false};
  std::thread publisher([&] {
    for (std::uint64_t v = 2; v <= kVersions; ++v) {
      auto& buf = trainer[v % 2];
      if (v > 2) pub.unpublish("m", v - 2);
      buf.fill(v);
      pub.publish("m", v, buf.tensors, std::nullopt);
      std::this_thread::sleep_for(2ms);
    }
    stop = true;
  });
  std::size_t torn = 0;
  std::size_t pulls = 0;
  std::vector<std::thread> rollouts;
  std::vector<std::size_t> torn_by(readers.size(), 0);
  std::vector<std::size_t> pulls_by(readers.size(), 0);
  std::vector<std::size_t> failed_by(readers.size(), 0);
  // Outside the threads: a rollout that is done still relays its sets to the other one.
  std::vector<Buffers> sets_of;
  for (std::size_t i = 0; i < 2 * readers.size(); ++i) sets_of.emplace_back(2, kBytes);
  for (std::size_t r = 0; r < readers.size(); ++r) {
    rollouts.emplace_back([&, r] {
      Buffers* sets = &sets_of[2 * r];
      for (int i = 0; !stop.load(); ++i) {
        auto h = readers[r]->pull_async("m", Version::latest(), sets[i % 2].tensors, {});
        try {
          const auto res = h.result();
          torn_by[r] += sets[i % 2].mismatches(res.version);
          ++pulls_by[r];
        } catch (const NotFoundError&) {
          // the version resolved went away before its chunks were read: fine, never torn
        } catch (const std::exception& e) {
          ++failed_by[r];
          ADD_FAILURE() << "rollout " << r << ": " << e.what();
        }
      }
    });
  }
  publisher.join();
  for (auto& t : rollouts) t.join();
  for (std::size_t r = 0; r < readers.size(); ++r) {
    for (std::size_t i = 0; i < 2; ++i) readers[r]->stop_relaying(sets_of[2 * r + i].tensors);
    torn += torn_by[r];
    pulls += pulls_by[r];
  }
  EXPECT_GT(pulls, 0u);
  EXPECT_EQ(torn, 0u);
}

}  // namespace
}  // namespace tensorhub::test
