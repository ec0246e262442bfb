// lib/transfer PullEngine against a scripted coordinator and a transport whose reads do not
// finish: the error path gives up on reads still in flight at the pull's deadline (and says
// which), and an assignment the engine cannot use (a chunk out of range, of a tensor it does
// not pull, or one it already reads) is a TransportError naming it, never undefined behaviour.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "tensorhub/coord/client.hpp"
#include "tensorhub/core/error.hpp"
#include "tensorhub/core/manifest.hpp"
#include "tensorhub/transfer/pull_engine.hpp"

namespace tensorhub::transfer {
namespace {

using namespace std::chrono_literals;
using coord::WorkerId;

constexpr std::uint64_t kChunk = 4096;
constexpr WorkerId kSelf = 7;
constexpr WorkerId kHolder = 3;

[[noreturn]] void unused() { throw ContractViolation("not used by the pull engine"); }

// acquire() answers from a script (then nothing); complete() is recorded.
class ScriptedClient final : public coord::Client {
 public:
  WorkerId register_worker(const coord::WorkerInfo&) override { unused(); }
  void deregister_worker(WorkerId) override { unused(); }
  coord::HeartbeatReply heartbeat(WorkerId) override { unused(); }
  std::vector<coord::WorkerStatus> workers() override { unused(); }
  coord::PublishReply publish(const coord::PublishRequest&) override { unused(); }
  std::uint32_t unpublish(WorkerId, const std::string&, std::uint64_t) override { unused(); }
  std::uint32_t wait_drained(WorkerId, const std::string&, std::uint64_t, std::chrono::milliseconds) override {
    unused();
  }
  void retain(const std::string&, std::uint64_t) override { unused(); }
  void release(const std::string&, std::uint64_t) override { unused(); }
  void attach_snapshot(const std::string&, const Manifest&) override { unused(); }
  coord::OffloadLease begin_offload(WorkerId, const std::string&, std::uint64_t) override { unused(); }
  void end_offload(WorkerId, const std::string&, std::uint64_t) override { unused(); }
  std::optional<std::uint64_t> latest(const std::string&) override { unused(); }
  std::optional<std::uint64_t> wait_for(const std::string&, std::optional<std::uint64_t>,
                                        std::chrono::milliseconds) override {
    unused();
  }
  coord::ResolveReply resolve(const coord::ResolveRequest&) override { unused(); }
  void offer_relay(const coord::RelayOffer&) override { unused(); }
  coord::AcquireReply acquire(const coord::AcquireRequest&) override {
    if (replies.empty()) return {};
    auto r = replies.front();
    replies.pop_front();
    return r;
  }
  void complete(const coord::CompleteRequest& r) override {
    for (const auto& res : r.results) results.push_back(res);
  }
  void finish(const coord::FinishRequest&) override { unused(); }
  std::vector<coord::ModelStatus> status() override { unused(); }

  // Results reported for `chunk`, in order.
  std::vector<bool> outcomes(std::uint32_t chunk) const {
    std::vector<bool> v;
    for (const auto& r : results) {
      if (r.chunk == chunk) v.push_back(r.ok);
    }
    return v;
  }

  std::deque<coord::AcquireReply> replies;
  std::vector<coord::ChunkResult> results;
};

// Reads finish (ok, bytes untouched) only after `finish_after` polls; then every read posted so
// far finishes at once and `forced` is set. finish_after = 0: reads finish at the next poll.
class SlowTransport final : public transport::Transport {
 public:
  explicit SlowTransport(std::uint64_t finish_after) : finish_after_(finish_after) {}

  std::string_view name() const override { return "slow"; }
  const std::string& endpoint() const override { return endpoint_; }
  bool reaches(std::string_view) const override { return true; }
  std::unique_ptr<transport::Exposure> expose(std::span<const transport::MemoryRange>) override { unused(); }
  void post(const transport::ReadOp& op) override { posted.push_back(op); }
  void poll(std::vector<transport::Completion>& out) override {
    if (++polls_ <= finish_after_ && finish_after_ > 0) return;
    if (finish_after_ > 0 && !pending()) return;
    forced = finish_after_ > 0;
    for (; done_ < posted.size(); ++done_) out.push_back(transport::Completion{posted[done_].tag, true, {}});
  }
  std::size_t in_flight() const override { return posted.size() - done_; }

  std::vector<transport::ReadOp> posted;
  bool forced = false;

 private:
  bool pending() const { return done_ < posted.size(); }
  std::uint64_t finish_after_;
  std::uint64_t polls_ = 0;
  std::size_t done_ = 0;
  std::string endpoint_ = "slow:self";
};

coord::Assignment assign(std::uint32_t chunk) {
  return coord::Assignment{chunk, kHolder, "slow:holder", "region", chunk * kChunk, true};
}

class PullEngineErrors : public ::testing::Test {
 protected:
  PullEngineErrors() : a_(4 * kChunk, 1), b_(2 * kChunk, 2) {
    const std::vector<Tensor> t{host_tensor("a", DType::kU8, {static_cast<std::int64_t>(a_.size())}, a_.data()),
                                host_tensor("b", DType::kU8, {static_cast<std::int64_t>(b_.size())}, b_.data())};
    std::vector<ShardManifest> shards{describe_shard(0, t, kChunk)};
    manifest_ = assemble_manifest("m", 1, kChunk, std::move(shards));  // chunks 0-3: a, 4-5: b
  }

  // Pulls tensor "a" only.
  void pull(transport::Transport& t, std::chrono::milliseconds deadline) {
    EngineOptions o;
    o.verify = false;
    o.relay = false;
    o.inflight = 4;
    o.deadline = deadline;
    const std::vector<Destination> dests{Destination{0, out_.data()}};
    PullEngine(client_, t, kSelf).run(manifest_, dests, o);
  }

  std::vector<unsigned char> a_, b_;
  std::vector<unsigned char> out_ = std::vector<unsigned char>(4 * kChunk);
  Manifest manifest_;
  ScriptedClient client_;
};

TEST_F(PullEngineErrors, DrainAfterAnErrorStopsAtTheDeadlineAndNamesTheAbandonedReads) {
  // Two reads go out, then the coordinator says chunk 2 has no holder: the engine drains the two
  // reads, which never finish within the deadline. Before the fix the drain polled until they
  // finished (here: after 200000 polls, tens of seconds of 50 us naps).
  SlowTransport slow(200000);
  coord::AcquireReply r;
  r.assignments = {assign(0), assign(1)};
  r.unavailable = {2};
  client_.replies.push_back(r);
  try {
    pull(slow, 50ms);
    ADD_FAILURE() << "pull succeeded";
  } catch (const TimeoutError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("no live holder has tensor 'a' chunk 2"), std::string::npos) << what;
    EXPECT_NE(what.find("abandoned 2 read(s)"), std::string::npos) << what;
    EXPECT_NE(what.find("tensor 'a' chunk 0"), std::string::npos) << what;
    EXPECT_NE(what.find("tensor 'a' chunk 1"), std::string::npos) << what;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected TimeoutError, got: " << e.what();
  }
  EXPECT_FALSE(slow.forced) << "the drain waited for the reads past the deadline";
  // Their pins are released: reported as failed reads.
  EXPECT_EQ(client_.outcomes(0), std::vector<bool>{false});
  EXPECT_EQ(client_.outcomes(1), std::vector<bool>{false});
}

TEST_F(PullEngineErrors, DrainAfterAnErrorKeepsTheOriginalErrorWhenEveryReadLanded) {
  SlowTransport quick(0);
  coord::AcquireReply r;
  r.assignments = {assign(0)};
  r.unavailable = {2};
  client_.replies.push_back(r);
  EXPECT_THROW(pull(quick, 10s), ChunksUnavailable);
  EXPECT_EQ(client_.outcomes(0), std::vector<bool>{true});
}

TEST_F(PullEngineErrors, AssignmentOfAChunkOutOfRangeIsATransportError) {
  SlowTransport quick(0);
  coord::AcquireReply r;
  r.assignments = {assign(1), assign(99)};
  client_.replies.push_back(r);
  try {
    pull(quick, 10s);
    ADD_FAILURE() << "pull succeeded";
  } catch (const TransportError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("chunk 99 of 'm' v1"), std::string::npos) << what;
    EXPECT_NE(what.find("only 6 chunks"), std::string::npos) << what;
  }
  ASSERT_EQ(quick.posted.size(), 1u) << "only the valid read was posted";
  EXPECT_EQ(client_.outcomes(1), std::vector<bool>{true}) << "the valid read was drained and reported";
}

TEST_F(PullEngineErrors, AssignmentOfATensorNotPulledIsATransportError) {
  SlowTransport quick(0);
  coord::AcquireReply r;
  r.assignments = {assign(4)};  // tensor "b": no destination
  client_.replies.push_back(r);
  try {
    pull(quick, 10s);
    ADD_FAILURE() << "pull succeeded";
  } catch (const TransportError& e) {
    EXPECT_NE(std::string(e.what()).find("tensor 'b' chunk 0"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(quick.posted.empty()) << "a read into no buffer was posted";
  EXPECT_EQ(client_.outcomes(4), std::vector<bool>{false}) << "its pin is released";
}

TEST_F(PullEngineErrors, AssignmentOfAChunkAlreadyInFlightIsATransportError) {
  SlowTransport quick(0);
  coord::AcquireReply r;
  r.assignments = {assign(0), assign(0)};
  client_.replies.push_back(r);
  try {
    pull(quick, 10s);
    ADD_FAILURE() << "pull succeeded";
  } catch (const TransportError& e) {
    EXPECT_NE(std::string(e.what()).find("did not ask for or already reads"), std::string::npos) << e.what();
  }
  EXPECT_EQ(quick.posted.size(), 1u);
  // The duplicate's pin and the real read are both reported.
  auto outcomes = client_.outcomes(0);
  std::sort(outcomes.begin(), outcomes.end());
  EXPECT_EQ(outcomes, (std::vector<bool>{false, true}));
}

}  // namespace
}  // namespace tensorhub::transfer
