// The cma transport between two processes: a holder forked from the test (forked_holder.hpp)
// exposes memory, the test process reads it. Reads, reachability, withdrawal, exited holders,
// recycled pids, deadlines and refused input.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "cma/cma_transport.hpp"
#include "cma/codec.hpp"
#include "forked_holder.hpp"
#include "read_util.hpp"
#include "tensorhub/core/error.hpp"

namespace tensorhub::transport {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;
constexpr std::uint64_t kMiB = 1ull << 20;

std::vector<test::Region> regions_of(const test::ForkedHolder& h) {
  std::vector<test::Region> out;
  for (const auto& d : h.descriptors()) out.push_back({h.endpoint(), d, h.part()});
  return out;
}

// One read of `bytes` at `offset` of the holder's first range; waits for its completion.
Completion read_one(Transport& t, const std::string& endpoint, const std::string& descriptor, void* dst,
                    std::uint64_t bytes, std::uint64_t offset = 0) {
  t.post({endpoint, descriptor, offset, dst, bytes, 7});
  std::vector<Completion> done;
  const auto end = Clock::now() + 30s;
  while (done.empty() && Clock::now() < end) {
    t.poll(done);
    std::this_thread::sleep_for(100us);
  }
  if (done.empty()) return Completion{0, false, "no completion within 30 s"};
  return done.front();
}

class CmaTransportTest : public ::testing::Test {
 protected:
  void SetUp() override { alarm(60); }  // a hang kills the binary; the holders exit with their pipe
  void TearDown() override { alarm(0); }
};

TEST_F(CmaTransportTest, ReadsAnotherProcessInChunksAndThreads) {
  test::ForkedHolder h(64, 4, 3);
  CmaOptions o;
  o.chunk = 1 * kMiB;  // several chunks per read
  o.threads = 3;
  CmaTransport reader(o);
  std::vector<std::uint64_t> dst(64 * kMiB / 8);
  auto* p = reinterpret_cast<unsigned char*>(dst.data());
  const auto done = test::read_regions(reader, regions_of(h), p, 4 * kMiB, 8, 30s);
  ASSERT_EQ(done.size(), 16u);
  for (const auto& c : done) ASSERT_TRUE(c.ok) << c.error;
  EXPECT_TRUE(test::check_pattern(p, 0, 64 * kMiB, 3));
  EXPECT_EQ(reader.in_flight(), 0u);
  // A read at an offset, of an odd length.
  std::vector<unsigned char> small(1000);
  const auto c = read_one(reader, h.endpoint(), h.descriptors()[1], small.data(), 1000, 8 * 100);
  ASSERT_TRUE(c.ok) << c.error;
  EXPECT_TRUE(test::check_pattern(small.data(), h.part() + 800, 992, 3));
}

// A scattered read (ReadOp::pieces): 1000-byte pieces 3000 apart, at odd addresses (17 + 3000 k:
// the streamed copy's unaligned heads and tails), read through bounce blocks that cut pieces.
TEST_F(CmaTransportTest, ScattersAReadIntoPieces) {
  test::ForkedHolder h(4, 1, 5);
  CmaOptions o;
  o.chunk = 1 * kMiB;
  o.bounce_block = 300000;  // not a multiple of the pieces
  CmaTransport reader(o);
  EXPECT_TRUE(reader.can_scatter(h.endpoint(), h.descriptors()[0]));
  const std::uint64_t n = 4 * kMiB;
  ReadOp op{h.endpoint(), h.descriptors()[0], 0, nullptr, n, 9};
  for (std::uint64_t at = 0; at < n; at += 1000)
    op.pieces.push_back(Piece{at * 3 + 17, std::min<std::uint64_t>(1000, n - at)});
  std::vector<unsigned char> dst(3 * n + 3017, 0xee);
  op.dst = dst.data();
  reader.post(op);
  std::vector<Completion> done;
  const auto end = Clock::now() + 30s;
  while (done.empty() && Clock::now() < end) {
    reader.poll(done);
    std::this_thread::sleep_for(100us);
  }
  ASSERT_EQ(done.size(), 1u);
  ASSERT_TRUE(done[0].ok) << done[0].error;
  std::vector<unsigned char> back;
  for (const auto& p : op.pieces) back.insert(back.end(), dst.begin() + p.offset, dst.begin() + p.offset + p.length);
  EXPECT_TRUE(test::check_pattern(back.data(), 0, n, 5));
  EXPECT_EQ(dst[17 + 1000], 0xee) << "a byte between pieces was written";
  EXPECT_EQ(dst[16], 0xee);
  // Pieces that do not add up to the read are refused before anything is read.
  op.pieces.pop_back();
  EXPECT_THROW(reader.post(op), ContractViolation);
  EXPECT_EQ(reader.in_flight(), 0u);
}

// A read that asks for a digest (ReadOp::digest) is hashed part by part as it is copied
// (digest_block bytes per process_vm_readv): the completion's digest is the checksum of the bytes
// that landed, contiguous or scattered, whatever the parts; a read without one carries none.
TEST_F(CmaTransportTest, DigestsWhatLandedPartByPart) {
  test::ForkedHolder h(4, 1, 11);
  CmaOptions o;
  o.chunk = 1 * kMiB;
  o.digest_block = 100000;  // parts that cut pieces, and not a divisor of the read
  o.bounce_block = 70000;   // the same for the scattered read's bounce blocks
  CmaTransport reader(o);
  const std::uint64_t n = 3 * kMiB + 5;
  const auto wait = [&] {
    std::vector<Completion> done;
    const auto end = Clock::now() + 30s;
    while (done.empty() && Clock::now() < end) {
      reader.poll(done);
      std::this_thread::sleep_for(100us);
    }
    return done;
  };
  for (const auto algorithm : {ChecksumAlgorithm::kXxh3_64, ChecksumAlgorithm::kXxh64}) {
    SCOPED_TRACE(checksum_algorithm_name(algorithm));
    std::vector<unsigned char> flat(n);
    ReadOp op{h.endpoint(), h.descriptors()[0], 8, flat.data(), n, 1};
    op.digest = algorithm;
    reader.post(op);
    auto done = wait();
    ASSERT_EQ(done.size(), 1u);
    ASSERT_TRUE(done[0].ok) << done[0].error;
    ASSERT_TRUE(done[0].digest.has_value());
    EXPECT_EQ(*done[0].digest, checksum64(algorithm, flat.data(), n));
    // The same bytes scattered into 999-byte pieces 2 apart: the same digest.
    std::vector<unsigned char> spread(2 * n + 2);
    op.dst = spread.data();
    for (std::uint64_t at = 0; at < n; at += 999)
      op.pieces.push_back(Piece{2 * at, std::min<std::uint64_t>(999, n - at)});
    reader.post(op);
    done = wait();
    ASSERT_EQ(done.size(), 1u);
    ASSERT_TRUE(done[0].ok) << done[0].error;
    ASSERT_TRUE(done[0].digest.has_value());
    EXPECT_EQ(*done[0].digest, checksum64(algorithm, flat.data(), n));
  }
  std::vector<unsigned char> plain(1000);
  const auto c = read_one(reader, h.endpoint(), h.descriptors()[0], plain.data(), plain.size());
  ASSERT_TRUE(c.ok) << c.error;
  EXPECT_FALSE(c.digest.has_value()) << "no digest asked for";
}

TEST_F(CmaTransportTest, ReachesTheSameHostOnly) {
  CmaTransport t;
  EXPECT_EQ(t.name(), "cma");
  EXPECT_TRUE(t.reaches(t.endpoint()));
  test::ForkedHolder h(1, 1, 1);
  EXPECT_TRUE(t.reaches(h.endpoint()));
  // Another boot id: another machine (or a rebooted one).
  auto other = cma::decode_endpoint(h.endpoint());
  other.host.boot_id[0] = other.host.boot_id[0] == 'a' ? 'b' : 'a';
  EXPECT_FALSE(t.reaches(cma::encode_endpoint(other)));
  std::uint64_t word = 0;
  EXPECT_THROW(t.post({cma::encode_endpoint(other), h.descriptors()[0], 0, &word, 8, 1}), TransportError);
  // Another pid namespace: the pid would name another process.
  other = cma::decode_endpoint(h.endpoint());
  other.host.pid_ns += 1;
  EXPECT_FALSE(t.reaches(cma::encode_endpoint(other)));
  EXPECT_FALSE(t.reaches("ucx:host/1:AAAA"));
  EXPECT_FALSE(t.reaches("local:x"));
  EXPECT_FALSE(t.reaches("cma:garbage"));
}

TEST_F(CmaTransportTest, RefusesMalformedAndOutOfBoundsReads) {
  test::ForkedHolder h(1, 1, 2);
  CmaTransport t;
  std::vector<unsigned char> dst(2 * kMiB);
  const auto& d = h.descriptors()[0];
  EXPECT_THROW(t.post({h.endpoint(), d, 0, dst.data(), 1 * kMiB + 1, 1}), TransportError);
  EXPECT_THROW(t.post({h.endpoint(), d, 1 * kMiB, dst.data(), 1, 1}), TransportError);
  EXPECT_THROW(t.post({h.endpoint(), d, ~0ull, dst.data(), 2, 1}), TransportError);
  EXPECT_THROW(t.post({h.endpoint(), "cma:1:2:3", 0, dst.data(), 1, 1}), TransportError);
  EXPECT_THROW(t.post({"cma:nonsense", d, 0, dst.data(), 1, 1}), TransportError);
  EXPECT_THROW(t.post({h.endpoint(), d, 0, nullptr, 8, 1}), TransportError);
  // A slot beyond the holder's table.
  auto e = cma::decode_endpoint(h.endpoint());
  e.slots = 1;
  auto dd = cma::decode_descriptor(d);
  dd.slot = 5;
  EXPECT_THROW(t.post({cma::encode_endpoint(e), cma::encode_descriptor(dd), 0, dst.data(), 8, 1}), TransportError);
  EXPECT_EQ(t.in_flight(), 0u);
  // A forged generation: the read is refused by the holder's table, not performed.
  dd = cma::decode_descriptor(d);
  dd.generation += 1;
  const auto c = read_one(t, h.endpoint(), cma::encode_descriptor(dd), dst.data(), 8);
  EXPECT_FALSE(c.ok);
  EXPECT_NE(c.error.find("withdrawn"), std::string::npos) << c.error;
}

TEST_F(CmaTransportTest, WithdrawnExposureIsNotRead) {
  test::ForkedHolder h(4, 1, 4);
  CmaTransport t;
  std::vector<unsigned char> dst(4 * kMiB);
  ASSERT_TRUE(read_one(t, h.endpoint(), h.descriptors()[0], dst.data(), 4 * kMiB).ok);
  h.withdraw();
  std::fill(dst.begin(), dst.end(), 0);
  const auto c = read_one(t, h.endpoint(), h.descriptors()[0], dst.data(), 4 * kMiB);
  EXPECT_FALSE(c.ok);
  EXPECT_NE(c.error.find("withdrawn"), std::string::npos) << c.error;
  EXPECT_EQ(dst[0], 0);  // checked before any byte was copied
  EXPECT_EQ(dst.back(), 0);
}

TEST_F(CmaTransportTest, ExitedHolderFailsFastWithoutException) {
  test::ForkedHolder h(4, 1, 5);
  CmaOptions o;
  o.deadline = 60s;  // so a fast failure is the pidfd's doing, not the deadline's
  CmaTransport t(o);
  std::vector<unsigned char> dst(4 * kMiB);
  ASSERT_TRUE(read_one(t, h.endpoint(), h.descriptors()[0], dst.data(), 4 * kMiB).ok);  // pidfd opened
  h.kill(/*reap=*/false);  // a zombie: the pid still exists
  const auto t0 = Clock::now();
  auto c = read_one(t, h.endpoint(), h.descriptors()[0], dst.data(), 4 * kMiB);
  EXPECT_FALSE(c.ok);
  EXPECT_NE(c.error.find("exited"), std::string::npos) << c.error;
  EXPECT_LT(Clock::now() - t0, 5s);  // generous: the deadline is 60 s
  // A fresh transport (pidfd opened after the death) and a reaped pid: the same.
  h.kill();
  CmaTransport fresh(o);
  c = read_one(fresh, h.endpoint(), h.descriptors()[0], dst.data(), 8);
  EXPECT_FALSE(c.ok);
  EXPECT_NE(c.error.find("exited"), std::string::npos) << c.error;
}

TEST_F(CmaTransportTest, RecycledPidIsNeverRead) {
  test::ForkedHolder h(1, 1, 6);
  CmaTransport t;
  auto e = cma::decode_endpoint(h.endpoint());
  e.start_time += 1;  // the same pid, another incarnation
  std::vector<unsigned char> dst(64, 0);
  const auto c = read_one(t, cma::encode_endpoint(e), h.descriptors()[0], dst.data(), 64);
  EXPECT_FALSE(c.ok);
  EXPECT_NE(c.error.find("another process"), std::string::npos) << c.error;
  EXPECT_EQ(dst[0], 0);
}

TEST_F(CmaTransportTest, DeadlineBoundsEveryRead) {
  test::ForkedHolder h(64, 1, 7);
  CmaOptions o;
  o.deadline = 1ms;
  o.chunk = 4096;  // 16384 syscalls: far longer than 1 ms
  o.threads = 1;
  CmaTransport t(o);
  std::vector<unsigned char> dst(64 * kMiB);
  const auto c = read_one(t, h.endpoint(), h.descriptors()[0], dst.data(), 64 * kMiB);
  EXPECT_FALSE(c.ok);
  EXPECT_NE(c.error.find("deadline"), std::string::npos) << c.error;
}

TEST_F(CmaTransportTest, ExposesOnlyHostMemoryAndAllocatesPages) {
  CmaTransport t;
  void* p = t.allocate(100);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % 4096, 0u);
  const MemoryRange cuda{p, 100, MemoryKind::kCuda};
  EXPECT_THROW((void)t.expose(std::span(&cuda, 1)), UserError);
  const MemoryRange host{p, 100};
  const auto x = t.expose(std::span(&host, 1));
  ASSERT_EQ(x->descriptors().size(), 1u);
  // Read back from this very process (a holder may be its own reader).
  std::vector<unsigned char> dst(100);
  static_cast<unsigned char*>(p)[42] = 42;
  const auto c = read_one(t, t.endpoint(), x->descriptors()[0], dst.data(), 100);
  ASSERT_TRUE(c.ok) << c.error;
  EXPECT_EQ(dst[42], 42);
  t.deallocate(p);
}

}  // namespace
}  // namespace tensorhub::transport
