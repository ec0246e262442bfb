// lib/transfer PullEngine over transport::LocalTransport with an in-process coord::Coordinator
// as its Client (publishers and readers are fake workers in this process, pull_engine_fixture.hpp):
// byte-identical pulls of multi-shard versions, partial pulls, relaying from an earlier reader.
// Checksum failures, verify/relay switches, lost holders and deadlines: test_pull_engine_checks.cpp. Plan mode is the
// default (the in-process Coordinator plans); tests of acquire-mode mechanics (acquire window, source slots) set
// EngineOptions::plan = false.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "pull_engine_fixture.hpp"
#include "tensorhub/coord/coordinator.hpp"
#include "tensorhub/core/error.hpp"
#include "tensorhub/core/manifest.hpp"
#include "tensorhub/transfer/pull_engine.hpp"

namespace tensorhub::transfer {
namespace {

using namespace std::chrono_literals;
using namespace engine_test;

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

}  // namespace
}  // namespace tensorhub::transfer
