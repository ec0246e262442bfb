// lib/transfer PullEngine: when completions reach the coordinator. With relay on, the chunks a
// reader now holds are announced after every poll that completed some (one complete() per reap),
// so readers relaying from it do not lag; with relay off, completions go in batches. A slow
// network is emulated by a transport that hands out one completion per poll.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "local/local_transport.hpp"
#include "tensorhub/coord/coordinator.hpp"
#include "tensorhub/core/manifest.hpp"
#include "tensorhub/transfer/pull_engine.hpp"

namespace tensorhub::transfer {
namespace {

using coord::WorkerId;

constexpr std::uint64_t kChunk = 4096;
constexpr std::uint32_t kChunks = 16;

// Forwards to a Coordinator and records every complete().
class RecordingClient final : public coord::Client {
 public:
  explicit RecordingClient(coord::Coordinator& c) : c_(c) {}

  WorkerId register_worker(const coord::WorkerInfo& info) override { return c_.register_worker(info); }
  void deregister_worker(WorkerId w) override { c_.deregister_worker(w); }
  coord::HeartbeatReply heartbeat(WorkerId w) override { return c_.heartbeat(w); }
  std::vector<coord::WorkerStatus> workers() override { return c_.workers(); }
  coord::PublishReply publish(const coord::PublishRequest& r) override { return c_.publish(r); }
  std::uint32_t unpublish(WorkerId w, const std::string& m, std::uint64_t v) override { return c_.unpublish(w, m, v); }
  std::uint32_t wait_drained(WorkerId w, const std::string& m, std::uint64_t v,
                             std::chrono::milliseconds timeout) override {
    return c_.wait_drained(w, m, v, timeout);
  }
  void retain(const std::string& m, std::uint64_t v) override { c_.retain(m, v); }
  void release(const std::string& m, std::uint64_t v) override { c_.release(m, v); }
  void attach_snapshot(const std::string& path, const Manifest& m) override { c_.attach_snapshot(path, m); }
  coord::OffloadLease begin_offload(WorkerId w, const std::string& m, std::uint64_t v) override {
    return c_.begin_offload(w, m, v);
  }
  void end_offload(WorkerId w, const std::string& m, std::uint64_t v) override { c_.end_offload(w, m, v); }
  std::optional<std::uint64_t> latest(const std::string& m) override { return c_.latest(m); }
  std::optional<std::uint64_t> wait_for(const std::string& m, std::optional<std::uint64_t> newer_than,
                                        std::chrono::milliseconds timeout) override {
    return c_.wait_for(m, newer_than, timeout);
  }
  coord::ResolveReply resolve(const coord::ResolveRequest& r) override { return c_.resolve(r); }
  void offer_relay(const coord::RelayOffer& o) override { c_.offer_relay(o); }
  coord::AcquireReply acquire(const coord::AcquireRequest& r) override { return c_.acquire(r); }
  void complete(const coord::CompleteRequest& r) override {
    completes.push_back(r);
    c_.complete(r);
  }
  void finish(const coord::FinishRequest& r) override { c_.finish(r); }
  std::vector<coord::ModelStatus> status() override { return c_.status(); }

  std::vector<coord::CompleteRequest> completes;

 private:
  coord::Coordinator& c_;
};

// LocalTransport whose poll() hands out at most one finished read at a time.
class TrickleTransport final : public transport::Transport {
 public:
  explicit TrickleTransport(std::string name) : inner_(std::move(name)) {}

  std::string_view name() const override { return inner_.name(); }
  const std::string& endpoint() const override { return inner_.endpoint(); }
  bool reaches(std::string_view endpoint) const override { return inner_.reaches(endpoint); }
  std::unique_ptr<transport::Exposure> expose(std::span<const transport::MemoryRange> ranges) override {
    return inner_.expose(ranges);
  }
  void post(const transport::ReadOp& op) override { inner_.post(op); }
  void poll(std::vector<transport::Completion>& out) override {
    std::vector<transport::Completion> done;
    inner_.poll(done);
    pending_.insert(pending_.end(), done.begin(), done.end());
    if (pending_.empty()) return;
    out.push_back(pending_.front());
    pending_.pop_front();
  }
  std::size_t in_flight() const override { return inner_.in_flight() + pending_.size(); }

 private:
  transport::LocalTransport inner_;
  std::deque<transport::Completion> pending_;
};

class PullEngineFlush : public ::testing::Test {
 protected:
  PullEngineFlush() : client_(coord_), origin_("flush-origin"), reader_("flush-reader") {
    data_.resize(kChunks * kChunk);
    for (std::size_t i = 0; i < data_.size(); ++i) data_[i] = static_cast<unsigned char>(i * 7 + i / 4096);
    const auto p = register_as(origin_.endpoint());
    self_ = register_as(reader_.endpoint());
    const transport::MemoryRange range{data_.data(), data_.size()};
    exposure_ = origin_.expose({&range, 1});
    const Tensor t = host_tensor("w", DType::kU8, {static_cast<std::int64_t>(data_.size())}, data_.data());
    coord::PublishRequest r;
    r.worker = p;
    r.model = "m";
    r.version = 1;
    r.chunk_bytes = kChunk;
    r.group = coord::Group{"trainer", 1, 0};
    r.shard = describe_shard(0, {&t, 1}, kChunk);
    r.regions = exposure_->descriptors();
    coord_.publish(r);
  }

  WorkerId register_as(const std::string& endpoint) {
    coord::WorkerInfo w;
    w.endpoint = endpoint;
    w.transport = "local";
    w.host = "host0";
    return coord_.register_worker(w);
  }

  // Pulls "m" v1 with 8 reads in flight; relays (offers the buffer) when `relay`.
  void pull(bool relay) {
    const auto m = client_.resolve(coord::ResolveRequest{self_, "m", std::nullopt, coord::Group{"r", 1, 0}, 0});
    out_.assign(data_.size(), 0);
    const transport::MemoryRange range{out_.data(), out_.size()};
    const auto mine = reader_.expose({&range, 1});
    if (relay) client_.offer_relay(coord::RelayOffer{self_, "m", 1, mine->descriptors(), ""});
    EngineOptions o;
    o.relay = relay;
    o.inflight = 8;
    const std::vector<Destination> dests{Destination{0, out_.data()}};
    PullEngine(client_, reader_, self_).run(*m.manifest, dests, o);
    ASSERT_TRUE(out_ == data_);
  }

  std::size_t results_reported() const {
    std::size_t n = 0;
    for (const auto& c : client_.completes) n += c.results.size();
    return n;
  }

  coord::Coordinator coord_;
  RecordingClient client_;
  transport::LocalTransport origin_;
  TrickleTransport reader_;
  WorkerId self_ = 0;
  std::vector<unsigned char> data_;
  std::vector<unsigned char> out_;
  std::unique_ptr<transport::Exposure> exposure_;
};

TEST_F(PullEngineFlush, WithRelayEveryCompletedReadIsAnnouncedAtOnce) {
  pull(/*relay=*/true);
  EXPECT_EQ(results_reported(), kChunks);
  ASSERT_EQ(client_.completes.size(), kChunks) << "one complete() per poll that completed a read";
  for (const auto& c : client_.completes) {
    EXPECT_EQ(c.results.size(), 1u);
    EXPECT_EQ(c.now_held.size(), 1u);
  }
  // The first chunk was a relay source after the first completion, not after a batch.
  EXPECT_EQ(client_.completes.front().now_held, std::vector<std::uint32_t>{0});
}

TEST_F(PullEngineFlush, WithoutRelayCompletionsAreBatched) {
  pull(/*relay=*/false);
  EXPECT_EQ(results_reported(), kChunks);
  EXPECT_LT(client_.completes.size(), kChunks);
  const auto biggest =
      std::max_element(client_.completes.begin(), client_.completes.end(),
                       [](const auto& a, const auto& b) { return a.results.size() < b.results.size(); });
  EXPECT_GE(biggest->results.size(), 8u / 2 + 1);
  for (const auto& c : client_.completes) EXPECT_TRUE(c.now_held.empty());
}

}  // namespace
}  // namespace tensorhub::transfer
