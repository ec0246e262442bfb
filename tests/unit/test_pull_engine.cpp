// lib/transfer PullEngine over transport::LocalTransport with an in-process coord::Coordinator
// as its Client (publishers and readers are fake workers in this process): byte-identical pulls
// of multi-shard versions, partial pulls, relaying from an earlier reader, checksum failures
// naming tensor and chunk, verify/relay switches, lost holders, deadlines, and that the engine
// never leaves a pin behind. Plan mode is the default (the in-process Coordinator plans); tests of
// acquire-mode mechanics (acquire window, source slots) set EngineOptions::plan = false.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "local/local_transport.hpp"
#include "tensorhub/coord/coordinator.hpp"
#include "tensorhub/core/error.hpp"
#include "tensorhub/core/manifest.hpp"
#include "tensorhub/transfer/pull_engine.hpp"

namespace tensorhub::transfer {
namespace {

using namespace std::chrono_literals;
using coord::Coordinator;
using coord::CoordinatorConfig;
using coord::WorkerId;

constexpr std::uint64_t kChunk = 4096;

struct TensorDef {
  std::string name;
  std::uint64_t bytes;
};

std::vector<unsigned char> pattern(std::uint64_t bytes, unsigned seed) {
  std::vector<unsigned char> v(bytes);
  for (std::uint64_t i = 0; i < bytes; ++i) v[i] = static_cast<unsigned char>((i * 131 + seed * 17 + i / 509) & 0xff);
  return v;
}

WorkerId register_local(Coordinator& c, const transport::LocalTransport& t) {
  coord::WorkerInfo w;
  w.endpoint = t.endpoint();
  w.transport = std::string(t.name());
  w.host = "host0";
  return c.register_worker(w);
}

// A publishing worker: owns host buffers, exposes them and publishes one shard.
struct Publisher {
  Publisher(Coordinator& c, const std::string& name) : transport(name), id(register_local(c, transport)) {}

  // Fills buffers with a per-tensor pattern, exposes them and publishes shard `group.rank`.
  coord::PublishReply publish(Coordinator& c, const std::string& model, std::uint64_t version,
                              const coord::Group& group, const std::vector<TensorDef>& defs) {
    std::vector<Tensor> tensors;
    std::vector<transport::MemoryRange> ranges;
    for (const auto& d : defs) {
      buffers.push_back(pattern(d.bytes, static_cast<unsigned>(buffers.size() + 10 * group.rank + 1)));
      tensors.push_back(host_tensor(d.name, DType::kU8, {static_cast<std::int64_t>(d.bytes)}, buffers.back().data()));
      ranges.push_back(transport::MemoryRange{buffers.back().data(), d.bytes, MemoryKind::kHost});
    }
    exposure = transport.expose(ranges);
    EXPECT_EQ(exposure->descriptors().size(), defs.size());
    coord::PublishRequest r;
    r.worker = id;
    r.model = model;
    r.version = version;
    r.chunk_bytes = kChunk;
    r.group = group;
    r.shard = describe_shard(group.rank, tensors, kChunk);
    r.regions = exposure->descriptors();
    return c.publish(r);
  }

  std::vector<unsigned char>& buffer(const std::string& name, const std::vector<TensorDef>& defs) {
    for (std::size_t i = 0; i < defs.size(); ++i) {
      if (defs[i].name == name) return buffers.at(i);
    }
    throw std::out_of_range(name);
  }

  transport::LocalTransport transport;
  WorkerId id;
  std::vector<std::vector<unsigned char>> buffers;  // in publish order
  std::unique_ptr<transport::Exposure> exposure;
};

// A reading worker: resolves, allocates destinations, offers them as relay sources, pulls.
struct Reader {
  Reader(Coordinator& c, const std::string& name) : transport(name), id(register_local(c, transport)), name_(name) {}

  void resolve(Coordinator& c, const std::string& model) {
    manifest = *c.resolve(coord::ResolveRequest{id, model, std::nullopt, coord::Group{name_, 1, 0}, 0}).manifest;
    buffers.clear();
    for (const auto& t : manifest.tensors) buffers.emplace_back(t.spec.bytes(), 0xEE);
  }

  void offer(Coordinator& c, const std::vector<std::uint32_t>& tensors) {
    std::vector<transport::MemoryRange> ranges;
    for (const auto t : tensors) ranges.push_back(transport::MemoryRange{buffers[t].data(), buffers[t].size()});
    exposure = transport.expose(ranges);
    std::vector<std::string> regions(manifest.tensors.size());
    for (std::size_t i = 0; i < tensors.size(); ++i) regions[tensors[i]] = exposure->descriptors()[i];
    c.offer_relay(coord::RelayOffer{id, manifest.model, manifest.version, regions, ""});
  }

  // Pulls `tensors` (all when empty); offers them for relay first when options.relay is set.
  PullStats pull(Coordinator& c, const std::string& model, EngineOptions options = {},
                 std::vector<std::uint32_t> tensors = {}) {
    resolve(c, model);
    if (tensors.empty()) {
      for (std::uint32_t t = 0; t < manifest.tensors.size(); ++t) tensors.push_back(t);
    }
    if (options.relay) offer(c, tensors);
    std::vector<Destination> dests;
    for (const auto t : tensors) dests.push_back(Destination{t, buffers[t].data()});
    PullEngine engine(c, transport, id);
    return engine.run(manifest, dests, options);
  }

  void finish(Coordinator& c) {
    c.finish(coord::FinishRequest{id, manifest.model, manifest.version, coord::Group{name_, 1, 0}, 0});
  }

  const std::vector<unsigned char>& tensor(const std::string& name) const { return buffers.at(*manifest.find(name)); }

  transport::LocalTransport transport;
  WorkerId id;
  Manifest manifest;
  std::vector<std::vector<unsigned char>> buffers;  // indexed like manifest.tensors
  std::unique_ptr<transport::Exposure> exposure;

 private:
  std::string name_;
};

// Pins held on the version by in-flight reads (excludes reading-group pins).
std::uint32_t read_pins(Coordinator& c, const std::string& model, std::uint64_t version, std::uint32_t group_pins) {
  for (const auto& m : c.status()) {
    for (const auto& v : m.versions) {
      if (m.model == model && v.version == version) return v.pins - group_pins;
    }
  }
  ADD_FAILURE() << model << " v" << version << " not in status()";
  return 0;
}

// Two publishers (a 2-rank group) with tensors of awkward sizes: several chunks with a short
// tail, exactly one chunk, less than a chunk.
const std::vector<TensorDef> kShard0{{"embed", 3 * kChunk + 123}, {"norm", 256}};
const std::vector<TensorDef> kShard1{{"layer.0.w", 2 * kChunk}, {"layer.0.b", kChunk}, {"head", 5 * kChunk + 1}};

std::uint64_t total(const std::vector<TensorDef>& a, const std::vector<TensorDef>& b = {}) {
  std::uint64_t n = 0;
  for (const auto& d : a) n += d.bytes;
  for (const auto& d : b) n += d.bytes;
  return n;
}

class PullEngineTest : public ::testing::Test {
 protected:
  explicit PullEngineTest(std::uint32_t k = 2)
      : coord_(CoordinatorConfig{k, 64}), p0_(coord_, "pub0"), p1_(coord_, "pub1") {}

  void publish_two_shards() {
    ASSERT_FALSE(p0_.publish(coord_, "m", 1, {"trainer", 2, 0}, kShard0).committed);
    ASSERT_TRUE(p1_.publish(coord_, "m", 1, {"trainer", 2, 1}, kShard1).committed);
  }

  void expect_identical(const Reader& r, const std::vector<std::string>& names) {
    for (const auto& n : names) {
      const auto& src = n == "embed" || n == "norm" ? p0_.buffer(n, kShard0) : p1_.buffer(n, kShard1);
      EXPECT_TRUE(r.tensor(n) == src) << "tensor " << n << " differs";
    }
  }

  Coordinator coord_;
  Publisher p0_;
  Publisher p1_;
};

class PullEngineK1Test : public PullEngineTest {
 protected:
  PullEngineK1Test() : PullEngineTest(1) {}
};

TEST_F(PullEngineTest, LocalExposeReturnsOneDescriptorPerRangeInOrder) {
  std::vector<unsigned char> a(10), b(20);
  transport::LocalTransport t("x");
  const std::vector<transport::MemoryRange> ranges{{a.data(), a.size()}, {b.data(), b.size()}};
  const auto e = t.expose(ranges);
  ASSERT_EQ(e->descriptors().size(), 2u);
  EXPECT_NE(e->descriptors()[0], e->descriptors()[1]);
  // Reading back through the descriptors returns each range's bytes.
  a[3] = 42;
  b[19] = 7;
  unsigned char x = 0, y = 0;
  t.post(transport::ReadOp{t.endpoint(), e->descriptors()[0], 3, &x, 1, 1});
  t.post(transport::ReadOp{t.endpoint(), e->descriptors()[1], 19, &y, 1, 2});
  std::vector<transport::Completion> done;
  t.poll(done);
  ASSERT_EQ(done.size(), 2u);
  EXPECT_TRUE(done[0].ok && done[1].ok);
  EXPECT_EQ(x, 42);
  EXPECT_EQ(y, 7);
}

TEST_F(PullEngineTest, ReaderGetsIdenticalBytesFromBothShards) {
  publish_two_shards();
  Reader r(coord_, "reader");
  const PullStats s = r.pull(coord_, "m");
  expect_identical(r, {"embed", "norm", "layer.0.w", "layer.0.b", "head"});

  const auto all = total(kShard0, kShard1);
  EXPECT_EQ(s.bytes, all);
  EXPECT_EQ(s.origin_bytes, all);
  EXPECT_EQ(s.relay_bytes, 0u);
  EXPECT_EQ(s.failed_reads, 0u);
  EXPECT_EQ(s.plan_calls, 1u) << "plan mode is the default: one plan for the whole pull";
  EXPECT_EQ(s.acquire_calls, 0u);
  EXPECT_GE(s.seconds, 0.0);
  ASSERT_EQ(s.sources.size(), 2u);
  EXPECT_EQ(s.sources.at(p0_.id).bytes, total(kShard0));
  EXPECT_EQ(s.sources.at(p0_.id).chunks, 4u + 1u);
  EXPECT_TRUE(s.sources.at(p0_.id).origin);
  EXPECT_EQ(s.sources.at(p1_.id).bytes, total(kShard1));
  EXPECT_EQ(s.sources.at(p1_.id).chunks, 2u + 1u + 6u);
  // No read pins left behind; only the reader's group pin until finish().
  EXPECT_EQ(read_pins(coord_, "m", 1, 1), 0u);
  r.finish(coord_);
  EXPECT_EQ(read_pins(coord_, "m", 1, 0), 0u);
}

TEST_F(PullEngineTest, SmallInflightAndAcquireWindowStillCopyEverything) {
  publish_two_shards();
  Reader r(coord_, "reader");
  EngineOptions o;
  o.plan = false;  // acquire mode: the acquire window is what this tests
  o.inflight = 1;
  o.acquire_window = 1;
  const PullStats s = r.pull(coord_, "m", o);
  expect_identical(r, {"embed", "norm", "layer.0.w", "layer.0.b", "head"});
  EXPECT_EQ(s.bytes, total(kShard0, kShard1));
  EXPECT_GE(s.acquire_calls, 14u);  // one chunk per call: 4 + 1 + 2 + 1 + 6 chunks
}

TEST_F(PullEngineTest, PartialPullCopiesOnlyTheChosenTensors) {
  publish_two_shards();
  Reader r(coord_, "reader");
  r.resolve(coord_, "m");
  const auto head = *r.manifest.find("head");
  const auto norm = *r.manifest.find("norm");
  const PullStats s = r.pull(coord_, "m", {}, {head, norm});
  expect_identical(r, {"head", "norm"});
  EXPECT_EQ(s.bytes, 5 * kChunk + 1 + 256);
  // Tensors not asked for are untouched.
  for (const auto* n : {"embed", "layer.0.w", "layer.0.b"}) {
    const auto& b = r.tensor(n);
    EXPECT_TRUE(std::all_of(b.begin(), b.end(), [](unsigned char x) { return x == 0xEE; })) << n;
  }
}

TEST_F(PullEngineTest, SecondReaderReadsFromTheFirst) {
  publish_two_shards();
  Reader a(coord_, "reader-a");
  const PullStats sa = a.pull(coord_, "m");
  ASSERT_EQ(sa.relay_bytes, 0u);

  Reader b(coord_, "reader-b");
  const PullStats sb = b.pull(coord_, "m");
  expect_identical(b, {"embed", "norm", "layer.0.w", "layer.0.b", "head"});
  const auto all = total(kShard0, kShard1);
  EXPECT_EQ(sb.bytes, all);
  EXPECT_GT(sb.relay_bytes, 0u);
  EXPECT_EQ(sb.relay_bytes + sb.origin_bytes, all);
  ASSERT_TRUE(sb.sources.count(a.id));
  EXPECT_EQ(sb.sources.at(a.id).bytes, sb.relay_bytes);
  EXPECT_FALSE(sb.sources.at(a.id).origin);
  EXPECT_EQ(read_pins(coord_, "m", 1, 2), 0u);
}

TEST_F(PullEngineTest, RelayedBytesReallyComeFromTheFirstReader) {
  publish_two_shards();
  Reader a(coord_, "reader-a");
  a.pull(coord_, "m");
  // Scribble over the origins' memory: any chunk read from an origin would now fail its
  // checksum, so a clean pull proves every byte came from reader A's buffers.
  for (auto& buf : p0_.buffers) std::memset(buf.data(), 0, buf.size());
  for (auto& buf : p1_.buffers) std::memset(buf.data(), 0, buf.size());
  Reader b(coord_, "reader-b");
  EngineOptions o;
  o.inflight = 1;
  const PullStats sb = b.pull(coord_, "m", o);
  EXPECT_EQ(sb.relay_bytes, total(kShard0, kShard1));
  EXPECT_EQ(sb.origin_bytes, 0u);
  EXPECT_TRUE(b.buffers == a.buffers);
}

TEST_F(PullEngineTest, RelayKeepsTheVersionReadableAfterThePublishersLeave) {
  publish_two_shards();
  Reader a(coord_, "reader-a");
  a.pull(coord_, "m");
  a.finish(coord_);
  EXPECT_EQ(coord_.unpublish(p0_.id, "m", 1), 0u);
  EXPECT_EQ(coord_.unpublish(p1_.id, "m", 1), 0u);
  EXPECT_EQ(coord_.latest("m"), 1u);
  Reader b(coord_, "reader-b");
  const PullStats sb = b.pull(coord_, "m");
  EXPECT_EQ(sb.relay_bytes, total(kShard0, kShard1));
  EXPECT_TRUE(b.buffers == a.buffers);
}

TEST_F(PullEngineTest, WithoutRelayTheFirstReaderIsNotASource) {
  publish_two_shards();
  Reader a(coord_, "reader-a");
  EngineOptions no_relay;
  no_relay.relay = false;
  a.pull(coord_, "m", no_relay);
  Reader b(coord_, "reader-b");
  const PullStats sb = b.pull(coord_, "m");
  EXPECT_EQ(sb.relay_bytes, 0u);
  EXPECT_EQ(sb.origin_bytes, total(kShard0, kShard1));
}

TEST_F(PullEngineTest, CorruptedSourceByteGivesChecksumErrorNamingTensorAndChunk) {
  publish_two_shards();
  // Chunk 1 of "head" (bytes 4096..8192) changes after its checksum was published.
  p1_.buffer("head", kShard1)[kChunk + 5] ^= 0x5a;
  Reader r(coord_, "reader");
  EngineOptions o;
  o.inflight = 1;  // see ChecksumErrorWithManyReadsInFlightReturns
  try {
    r.pull(coord_, "m", o);
    FAIL() << "expected ChecksumError";
  } catch (const ChecksumError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("tensor 'head'"), std::string::npos) << what;
    EXPECT_NE(what.find("chunk 1"), std::string::npos) << what;
    EXPECT_NE(what.find("4096..8192"), std::string::npos) << what;
  }
  // No pin left behind, and the reader did not become a source of the bad chunk: another
  // reader is sent to the origin for it although relays are preferred.
  EXPECT_EQ(read_pins(coord_, "m", 1, 1), 0u);
  // The bad read made the origin suspect (liveness.hpp) until it is heard from again.
  coord_.heartbeat(p1_.id);
  Reader other(coord_, "other");
  other.resolve(coord_, "m");
  const auto& head = other.manifest.tensors[*other.manifest.find("head")];
  const auto reply = coord_.acquire(coord::AcquireRequest{other.id, "m", 1, {head.first_chunk + 1}, 1});
  ASSERT_EQ(reply.assignments.size(), 1u);
  EXPECT_EQ(reply.assignments[0].holder, p1_.id);
}

// Issue 16: a relay serving wrong bytes made the reader fail with ChecksumError. Now the chunk is
// read again from another holder (the origin), and the pull succeeds with the right bytes.
TEST_F(PullEngineTest, ACorruptRelayCostsARereadFromAnotherHolderNotThePull) {
  publish_two_shards();
  Reader a(coord_, "relay");
  a.pull(coord_, "m");  // a now relays every chunk
  // a's copy of "head" chunk 1 goes bad after a announced it.
  const auto head = *a.manifest.find("head");
  a.buffers[head][kChunk + 5] ^= 0x5a;
  Reader b(coord_, "reader");
  EngineOptions o;
  o.inflight = 1;
  const PullStats s = b.pull(coord_, "m", o);
  EXPECT_GE(s.checksum_mismatches, 1u);
  EXPECT_GE(s.failed_reads, s.checksum_mismatches);
  EXPECT_GT(s.relay_bytes, 0u) << "b read from the relay first (relays are preferred)";
  expect_identical(b, {"embed", "norm", "layer.0.w", "layer.0.b", "head"});
  EXPECT_EQ(read_pins(coord_, "m", 1, 2), 0u);
}

TEST_F(PullEngineTest, VerifyOffAndRelayOffDoesNotCheck) {
  publish_two_shards();
  auto& src = p1_.buffer("head", kShard1);
  src[kChunk + 5] ^= 0x5a;
  Reader r(coord_, "reader");
  EngineOptions o;
  o.verify = false;
  o.relay = false;
  o.inflight = 1;
  const PullStats s = r.pull(coord_, "m", o);
  EXPECT_EQ(s.bytes, total(kShard0, kShard1));
  EXPECT_TRUE(r.tensor("head") == src);  // the corrupted byte was copied as is
}

TEST_F(PullEngineTest, RelayImpliesVerification) {
  publish_two_shards();
  p0_.buffer("norm", kShard0)[0] ^= 0x01;
  Reader r(coord_, "reader");
  EngineOptions o;
  o.verify = false;  // relay stays on: a relay must not pass bad bytes on
  o.inflight = 1;
  EXPECT_THROW(r.pull(coord_, "m", o), ChecksumError);
}

// Regression test for a fixed bug: after a ChecksumError, PullRun::drain_after_error (lib/transfer/src/
// pull_engine.cpp) waits for reads that reap() had already polled but not processed when it
// threw, so with several reads completing in one poll the pull never returns. Run in a child
// process with an alarm so that the bug fails this test instead of hanging the suite.
TEST_F(PullEngineTest, ChecksumErrorWithManyReadsInFlightReturns) {
  publish_two_shards();
  p0_.buffer("embed", kShard0)[0] ^= 0x01;  // the first chunk read
  EXPECT_EXIT(
      {
        alarm(3);
        Reader r(coord_, "reader");
        EngineOptions o;
        o.inflight = 8;
        try {
          r.pull(coord_, "m", o);
        } catch (const ChecksumError&) {
          _exit(3);
        }
        _exit(0);
      },
      ::testing::ExitedWithCode(3), "");
}

TEST_F(PullEngineTest, LostHolderGivesNotFoundError) {
  publish_two_shards();
  Reader r(coord_, "reader");
  r.resolve(coord_, "m");
  // p1 leaves the hub: its chunks have no live holder.
  coord_.deregister_worker(p1_.id);
  try {
    // The pull that resolved before p1 left (a new resolve would find nothing readable).
    std::vector<Destination> dests;
    for (std::uint32_t t = 0; t < r.manifest.tensors.size(); ++t) dests.push_back(Destination{t, r.buffers[t].data()});
    PullEngine(coord_, r.transport, r.id).run(r.manifest, dests, {});
    FAIL() << "expected NotFoundError";
  } catch (const NotFoundError& e) {
    EXPECT_NE(std::string(e.what()).find("no live holder"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("tensor 'layer.0.w'"), std::string::npos) << e.what();
  }
}

// Regression: when an acquire reply lists unavailable chunks, the engine must still release the
// pins of the reply's assignments, or the other holders never drain.
TEST_F(PullEngineTest, LostHolderErrorLeavesNoPins) {
  publish_two_shards();
  Reader r(coord_, "reader");
  r.resolve(coord_, "m");
  coord_.deregister_worker(p1_.id);
  EXPECT_THROW(r.pull(coord_, "m"), NotFoundError);
  EXPECT_EQ(read_pins(coord_, "m", 1, 1), 0u);
  // So p0, which still serves its shard, can withdraw and drain once the group is done.
  r.finish(coord_);
  EXPECT_EQ(coord_.unpublish(p0_.id, "m", 1), 0u);
}

TEST_F(PullEngineK1Test, BusySourcesMakeThePullTimeOutWithoutLeavingPins) {
  publish_two_shards();
  // Another reader occupies both origins (K=1) and never completes.
  Reader blocker(coord_, "blocker");
  blocker.resolve(coord_, "m");
  const auto held = coord_.acquire(coord::AcquireRequest{blocker.id, "m", 1, {0, 5}, 2});
  ASSERT_EQ(held.assignments.size(), 2u);
  ASSERT_NE(held.assignments[0].holder, held.assignments[1].holder);

  Reader r(coord_, "reader");
  EngineOptions o;
  o.plan = false;  // acquire mode: source slots (plans count children per stripe, test_coordinator_plans)
  o.deadline = 100ms;
  const auto start = std::chrono::steady_clock::now();
  EXPECT_THROW(r.pull(coord_, "m", o), TimeoutError);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  EXPECT_EQ(read_pins(coord_, "m", 1, 2), 2u);  // only the blocker's two reads
}

TEST_F(PullEngineTest, ZeroInflightIsUserError) {
  publish_two_shards();
  Reader r(coord_, "reader");
  EngineOptions o;
  o.inflight = 0;
  EXPECT_THROW(r.pull(coord_, "m", o), UserError);
}

// Regression test for a fixed bug: a failed read is reported (ChunkResult::ok = false) but Coordinator::acquire
// keeps choosing the same holder, so one broken relay makes every later reader spin until its
// deadline instead of "another holder serves it" (pull_engine.hpp).
TEST_F(PullEngineTest, FailedReadIsServedByAnotherHolder) {
  publish_two_shards();
  Reader a(coord_, "reader-a");
  EngineOptions no_relay;
  no_relay.relay = false;
  a.pull(coord_, "m", no_relay);
  // a offers its (correct) buffers but the descriptor of "head" is one byte short, so reading
  // head's last chunk from a fails.
  std::vector<transport::MemoryRange> ranges;
  for (auto& b : a.buffers) ranges.push_back({b.data(), b.size()});
  const auto head = *a.manifest.find("head");
  ranges[head].bytes -= 1;
  a.exposure = a.transport.expose(ranges);
  coord_.offer_relay(coord::RelayOffer{a.id, "m", 1, a.exposure->descriptors(), ""});
  std::vector<std::uint32_t> all(a.manifest.chunks.size());
  for (std::uint32_t c = 0; c < all.size(); ++c) all[c] = c;
  coord_.complete(coord::CompleteRequest{a.id, "m", 1, {}, all, {}, {}});

  Reader b(coord_, "reader-b");
  EngineOptions o;
  o.plan = false;  // acquire mode; plan mode excludes a failed source: PullEnginePlan.*
  o.deadline = 2s;
  const PullStats s = b.pull(coord_, "m", o);
  EXPECT_GE(s.failed_reads, 1u);
  EXPECT_TRUE(b.buffers == a.buffers);
}

}  // namespace
}  // namespace tensorhub::transfer
