// The fixture of the plan-mode PullEngine tests (test_pull_engine_plan*.cpp): a scripted
// coordinator (FakePlanClient), the reader's transport (TickTransport: LocalTransport with a
// hook before each poll and a log of the reads it was asked to post), an origin, a relay that
// advances when told, and a corrupt copy.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "local/local_transport.hpp"
#include "tensorhub/coord/client.hpp"
#include "tensorhub/core/error.hpp"
#include "tensorhub/core/manifest.hpp"
#include "tensorhub/transfer/pull_engine.hpp"

namespace tensorhub::transfer::plan_test {

using coord::WorkerId;

constexpr std::uint64_t kChunk = 4096;
constexpr std::uint32_t kChunks = 16;
constexpr WorkerId kSelf = 1;
constexpr WorkerId kOrigin = 2;
constexpr WorkerId kRelay = 3;
constexpr WorkerId kBad = 4;

// A Client that answers plan() with a script and records plan() and complete() in call order.
class FakePlanClient final : public coord::Client {
 public:
  std::function<coord::PlanReply(const coord::PlanRequest&)> on_plan;
  std::function<coord::AcquireReply(const coord::AcquireRequest&)> on_acquire;
  std::function<void(const coord::CompleteRequest&)> on_complete;  // may be empty
  std::vector<coord::PlanRequest> plans;
  std::vector<coord::CompleteRequest> completes;
  std::vector<std::string> calls;  // "plan", "complete", "acquire" in order
  std::uint32_t acquires = 0;

  coord::PlanReply plan(const coord::PlanRequest& r) override {
    calls.push_back("plan");
    plans.push_back(r);
    return on_plan(r);
  }
  coord::AcquireReply acquire(const coord::AcquireRequest& r) override {
    calls.push_back("acquire");
    ++acquires;
    return on_acquire(r);
  }
  void complete(const coord::CompleteRequest& r) override {
    calls.push_back("complete");
    completes.push_back(r);
    if (on_complete) on_complete(r);
  }

  WorkerId register_worker(const coord::WorkerInfo&) override { throw unused(); }
  void deregister_worker(WorkerId) override { throw unused(); }
  coord::HeartbeatReply heartbeat(WorkerId) override { throw unused(); }
  coord::PublishReply publish(const coord::PublishRequest&) override { throw unused(); }
  std::uint32_t unpublish(WorkerId, const std::string&, std::uint64_t) override { throw unused(); }
  std::uint32_t wait_drained(WorkerId, const std::string&, std::uint64_t, std::chrono::milliseconds) override {
    throw unused();
  }
  void retain(const std::string&, std::uint64_t) override { throw unused(); }
  void release(const std::string&, std::uint64_t) override { throw unused(); }
  void attach_snapshot(const std::string&, const Manifest&) override { throw unused(); }
  coord::OffloadLease begin_offload(WorkerId, const std::string&, std::uint64_t) override { throw unused(); }
  void end_offload(WorkerId, const std::string&, std::uint64_t) override { throw unused(); }
  std::optional<std::uint64_t> latest(const std::string&) override { throw unused(); }
  std::optional<std::uint64_t> wait_for(const std::string&, std::optional<std::uint64_t>,
                                        std::chrono::milliseconds) override {
    throw unused();
  }
  coord::ResolveReply resolve(const coord::ResolveRequest&) override { throw unused(); }
  void offer_relay(const coord::RelayOffer&) override { throw unused(); }
  void finish(const coord::FinishRequest&) override { throw unused(); }
  std::vector<coord::ModelStatus> status() override { throw unused(); }
  std::vector<coord::WorkerStatus> workers() override { throw unused(); }

 private:
  static ContractViolation unused() { return ContractViolation("the engine made an unexpected control call"); }
};

// The reader's transport: LocalTransport that runs `tick` before each poll (the relay advancing,
// a cancel arriving while the pull runs).
class TickTransport final : public transport::Transport {
 public:
  std::function<void()> tick;
  std::function<void(const transport::ReadOp&)> on_post;  // may be empty
  std::vector<transport::ReadOp> posted;                  // every read asked for, in order
  bool scatter = true;                                    // can_scatter's answer
  bool digest = false;  // whether reads return the digest asked for (LocalTransport does), or the engine hashes

  std::string_view name() const override { return inner_.name(); }
  const std::string& endpoint() const override { return inner_.endpoint(); }
  bool reaches(std::string_view e) const override { return inner_.reaches(e); }
  std::unique_ptr<transport::Exposure> expose(std::span<const transport::MemoryRange> r) override {
    return inner_.expose(r);
  }
  bool can_scatter(std::string_view e, std::string_view d) const override {
    return scatter && inner_.can_scatter(e, d);
  }
  void post(const transport::ReadOp& op) override {
    posted.push_back(op);
    if (on_post) on_post(op);
    if (digest) return inner_.post(op);
    transport::ReadOp plain = op;
    plain.digest.reset();
    inner_.post(plain);
  }
  void poll(std::vector<transport::Completion>& out) override {
    if (tick) tick();
    inner_.poll(out);
  }
  std::size_t in_flight() const override { return inner_.in_flight(); }

 private:
  transport::LocalTransport inner_{"plan-reader"};
};

class PullEnginePlan : public ::testing::Test {
 protected:
  PullEnginePlan() {
    data_.resize(kChunks * kChunk);
    for (std::size_t i = 0; i < data_.size(); ++i) data_[i] = static_cast<unsigned char>(i * 13 + i / 4096);
    corrupt_ = data_;
    corrupt_[5 * kChunk + 1] ^= 0xff;  // chunk 5 is bad there
    relay_buf_.assign(data_.size(), 0);
    relay_progress_.assign(kChunks, 0);
    own_progress_.assign(kChunks, 0);
    const Tensor t = host_tensor("w", DType::kU8, {static_cast<std::int64_t>(data_.size())}, data_.data());
    m_ = assemble_manifest("m", 1, kChunk, {describe_shard(0, {&t, 1}, kChunk)});
    origin_region_ = expose(data_.data(), data_.size());
    relay_region_ = expose(relay_buf_.data(), relay_buf_.size());
    relay_progress_desc_ = expose(relay_progress_.data(), relay_progress_.size());
    corrupt_region_ = expose(corrupt_.data(), corrupt_.size());
    short_region_ = expose(data_.data(), 1);  // every read past its first byte fails
    out_.assign(data_.size(), 0);
    o_.inflight = 4;
    o_.progress_bytes = own_progress_.data();
    o_.stall_timeout = std::chrono::milliseconds(100);
    o_.deadline = std::chrono::milliseconds(20000);
  }

  std::string expose(unsigned char* p, std::uint64_t n) {
    const transport::MemoryRange r{p, n};
    exposures_.push_back(peers_.expose({&r, 1}));
    return exposures_.back()->descriptors().front();
  }

  static coord::PlanSource source(WorkerId holder, const std::string& region, const std::string& progress = "") {
    return coord::PlanSource{holder, "local:peer" + std::to_string(holder), {region}, progress, holder == kOrigin, 0};
  }
  // Every chunk asked for, from one source.
  static coord::PlanReply all_from(const coord::PlanRequest& r, const coord::PlanSource& s) {
    coord::PlanReply reply;
    reply.sources.push_back(s);
    for (const auto& range : r.chunks) reply.steps.push_back(coord::PlanStep{range, 0});
    return reply;
  }

  // The relay gets one more chunk every `every` polls of the reader.
  void relay_advances(int every) {
    reader_.tick = [this, every, polls = 0, next = 0u]() mutable {
      if (++polls % every != 0 || next >= kChunks) return;
      std::copy_n(data_.begin() + next * kChunk, kChunk, relay_buf_.begin() + next * kChunk);
      relay_progress_[next++] = 1;
    };
  }

  // What `runs` should put in a destination of `n` bytes (0 elsewhere).
  std::vector<unsigned char> expected(const std::vector<transfer::Run>& runs, std::uint64_t n) const {
    std::vector<unsigned char> e(n, 0);
    for_each_piece(runs, 0, data_.size(), [&](std::uint64_t s, std::uint64_t d, std::uint64_t len) {
      std::copy_n(data_.begin() + static_cast<std::ptrdiff_t>(s), len, e.begin() + static_cast<std::ptrdiff_t>(d));
    });
    return e;
  }

  PullStats pull() {
    const std::vector<Destination> dests{Destination{0, out_.data()}};
    return PullEngine(client_, reader_, kSelf).run(m_, dests, o_);
  }

  // Scenarios run with inline verification (test_pull_engine_plan.cpp) and with verify threads
  // (test_pull_engine_verify_threads.cpp).
  // The first plan's source serves chunk 5 corrupt: it is reported, excluded, and chunk 5 is
  // read again from the origin.
  void expect_checksum_mismatch_excludes_the_source() {
    client_.on_plan = [&](const coord::PlanRequest& r) {
      if (client_.plans.size() == 1) return all_from(r, source(kBad, corrupt_region_));
      return all_from(r, source(kOrigin, origin_region_));
    };
    const auto stats = pull();
    EXPECT_EQ(out_, data_);
    EXPECT_EQ(stats.checksum_mismatches, 1u);
    ASSERT_EQ(client_.plans.size(), 2u);
    EXPECT_EQ(client_.plans[1].exclude, std::vector<WorkerId>{kBad});
    ASSERT_EQ(failures().size(), 1u);
    EXPECT_EQ(failures()[0].chunk, 5u);
    EXPECT_EQ(own_progress_[5], 1);
  }
  // The same with no other source: ChunksCorrupt, chunk 5 never marked held.
  void expect_corrupt_chunk_with_no_other_source_is_chunks_corrupt() {
    client_.on_plan = [&](const coord::PlanRequest& r) {
      if (client_.plans.size() == 1) return all_from(r, source(kBad, corrupt_region_));
      coord::PlanReply reply;
      reply.unavailable = r.chunks;
      return reply;
    };
    EXPECT_THROW(pull(), ChunksCorrupt);
    EXPECT_EQ(own_progress_[5], 0) << "a corrupt chunk is never marked held";
    EXPECT_EQ(released(), std::vector<WorkerId>{kBad});
  }

  std::vector<WorkerId> released() const {
    std::vector<WorkerId> out;
    for (const auto& c : client_.completes) out.insert(out.end(), c.release_sources.begin(), c.release_sources.end());
    std::sort(out.begin(), out.end());
    return out;
  }
  std::vector<coord::ChunkResult> failures() const {
    std::vector<coord::ChunkResult> out;
    for (const auto& c : client_.completes) {
      for (const auto& r : c.results) {
        if (!r.ok) out.push_back(r);
      }
    }
    return out;
  }
  std::uint64_t held_reported() const {
    std::uint64_t n = 0;
    for (const auto& c : client_.completes) {
      for (const auto& r : c.held_ranges) n += r.count;
    }
    return n;
  }

  transport::LocalTransport peers_{"peers"};
  TickTransport reader_;
  FakePlanClient client_;
  Manifest m_;
  EngineOptions o_;
  std::vector<unsigned char> data_, corrupt_, relay_buf_, relay_progress_, own_progress_, out_;
  std::vector<std::unique_ptr<transport::Exposure>> exposures_;
  std::string origin_region_, relay_region_, relay_progress_desc_, corrupt_region_, short_region_;
};

}  // namespace tensorhub::transfer::plan_test
