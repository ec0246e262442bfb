// Peer failures seen by the ucx transport (label "fault"): holders and readers are separate
// processes (ucx_peer, started with fork+exec) that the test SIGKILLs or SIGSTOPs mid-transfer.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <thread>

#include "read_util.hpp"
#include "ucx/ucx_transport.hpp"
#include "ucx_test_util.hpp"

namespace tensorhub::transport {
namespace {

using Clock = std::chrono::steady_clock;
constexpr std::uint64_t kMiB = 1ull << 20;
constexpr std::uint64_t kChunk = 4 * kMiB;

double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

class UcxFault : public ::testing::Test {
 protected:
  void SetUp() override { alarm(60); }  // a hang kills the binary (holders exit with their socket)
  void TearDown() override { alarm(0); }

  static std::vector<test::Region> regions_of(const test::HolderProcess& h, std::uint64_t part) {
    std::vector<test::Region> out;
    for (const auto& d : h.descriptors()) out.push_back({h.endpoint(), d, part});
    return out;
  }

  // Reads all of `h` (64 MiB in 4 MiB chunks) and checks every byte.
  static void expect_healthy_read(Transport& reader, const test::HolderProcess& h, std::uint32_t seed) {
    std::vector<std::uint64_t> dst(64 * kMiB / 8);
    auto* p = reinterpret_cast<unsigned char*>(dst.data());
    const auto done = test::read_regions(reader, regions_of(h, 16 * kMiB), p, kChunk, 8, std::chrono::seconds(20));
    ASSERT_EQ(done.size(), 16u);
    for (const auto& c : done) ASSERT_TRUE(c.ok) << c.error;
    EXPECT_TRUE(test::check_pattern(p, 0, 64 * kMiB, seed));
  }

  // A read of a dead peer: post() does not throw, the next poll() fails it.
  static void expect_fails_fast(Transport& reader, const test::HolderProcess& h) {
    std::vector<unsigned char> byte(8);
    const auto t = Clock::now();
    ASSERT_NO_THROW(reader.post({h.endpoint(), h.descriptors()[0], 0, byte.data(), 8, 999}));
    std::vector<Completion> done;
    reader.poll(done);
    ASSERT_EQ(done.size(), 1u);
    EXPECT_FALSE(done[0].ok);
    EXPECT_EQ(done[0].tag, 999u);
    EXPECT_LT(ms_since(t), 50.0);
  }
};

// Every read outstanding when the holder is SIGKILLed ends (ok=false unless its bytes had all
// arrived) within 2 s; the reader stays healthy and reads a second holder in full.
TEST_F(UcxFault, KilledHolderFailsOutstandingReadsFast) {
  test::HolderProcess victim(UCX_PEER_EXE, 64, 4, 21);
  test::HolderProcess other(UCX_PEER_EXE, 64, 4, 22);
  UcxOptions options;
  options.label = "reader";
  UcxTransport reader(options);  // default 5 s deadline: detection below must come from UCX
  expect_healthy_read(reader, victim, 21);

  constexpr std::size_t kDepth = 16;
  std::vector<std::uint64_t> slots(kDepth * kChunk / 8);
  auto* base = reinterpret_cast<unsigned char*>(slots.data());
  const auto regions = regions_of(victim, 16 * kMiB);
  std::uint64_t posted = 0;
  const auto post = [&](std::uint64_t slot) {
    const std::uint64_t chunk = posted++ % 16;  // 16 chunks of 4 MiB over the 4 regions
    reader.post({victim.endpoint(), regions[chunk / 4].descriptor, (chunk % 4) * kChunk, base + slot * kChunk, kChunk,
                 slot | (chunk << 32)});
  };
  for (std::size_t s = 0; s < kDepth; ++s) post(s);

  std::vector<Completion> done;
  std::size_t completed_before_kill = 0;
  while (completed_before_kill < 8) {  // streaming: keep kDepth reads in flight
    done.clear();
    reader.poll(done);
    for (const auto& c : done) {
      ASSERT_TRUE(c.ok) << c.error;
      ++completed_before_kill;
      post(c.tag & 0xffffffff);
    }
  }
  const std::size_t outstanding = reader.in_flight();
  ASSERT_GT(outstanding, 0u);
  const auto killed = Clock::now();
  victim.signal(SIGKILL);

  std::size_t failed = 0, ok = 0;
  double first_failure_ms = -1;
  done.clear();
  while (reader.in_flight() > 0 && ms_since(killed) < 5000) {
    const auto before = done.size();
    reader.poll(done);
    for (auto i = before; i < done.size(); ++i) {
      const auto& c = done[i];
      if (c.ok) {
        const std::uint64_t chunk = c.tag >> 32;
        EXPECT_TRUE(test::check_pattern(base + (c.tag & 0xffffffff) * kChunk, chunk * kChunk, kChunk, 21));
        ++ok;
        continue;
      }
      if (first_failure_ms < 0) first_failure_ms = ms_since(killed);
      ++failed;
      EXPECT_NE(c.error.find("ucx: peer holder-21"), std::string::npos) << c.error;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  const double all_done_ms = ms_since(killed);
  std::printf(
      "[ measured ] SIGKILL: %zu reads outstanding, %zu ok, %zu failed; first failure after %.1f ms, "
      "all ended after %.1f ms\n",
      outstanding, ok, failed, first_failure_ms, all_done_ms);
  if (!done.empty() && !done.back().ok) std::printf("[ measured ] error: %s\n", done.back().error.c_str());
  EXPECT_EQ(reader.in_flight(), 0u);
  EXPECT_EQ(ok + failed, outstanding);
  EXPECT_GT(failed, 0u);
  EXPECT_LT(all_done_ms, 2000.0);

  expect_fails_fast(reader, victim);
  expect_healthy_read(reader, other, 22);
}

// A stopped holder is never reported by UCX: its reads end with ok=false once the deadline
// (500 ms here) passes, the endpoint is force-closed, and other holders stay readable.
TEST_F(UcxFault, StoppedHolderFailsAfterDeadline) {
  test::HolderProcess victim(UCX_PEER_EXE, 64, 4, 31);
  test::HolderProcess other(UCX_PEER_EXE, 64, 4, 32);
  UcxOptions options;
  options.label = "reader";
  options.deadline = std::chrono::milliseconds(500);
  UcxTransport reader(options);
  expect_healthy_read(reader, victim, 31);

  victim.signal(SIGSTOP);
  std::vector<std::uint64_t> dst(16 * kChunk / 8);
  auto* p = reinterpret_cast<unsigned char*>(dst.data());
  const auto stopped = Clock::now();
  const auto done = test::read_regions(reader, regions_of(victim, 16 * kMiB), p, kChunk, 16, std::chrono::seconds(5));
  const double ended_ms = ms_since(stopped);
  std::size_t failed = 0;
  for (const auto& c : done) {
    if (c.ok) continue;
    ++failed;
    EXPECT_NE(c.error.find("deadline"), std::string::npos) << c.error;
    EXPECT_NE(c.error.find("holder-31"), std::string::npos) << c.error;
  }
  std::printf("[ measured ] SIGSTOP: %zu reads, %zu failed, all ended after %.1f ms (deadline 500 ms)\n", done.size(),
              failed, ended_ms);
  if (failed > 0) std::printf("[ measured ] error: %s\n", done.back().error.c_str());
  EXPECT_EQ(done.size(), 16u);
  EXPECT_GT(failed, 0u);
  EXPECT_EQ(reader.in_flight(), 0u);
  EXPECT_GE(ended_ms, 450.0);
  EXPECT_LT(ended_ms, 2000.0);

  expect_fails_fast(reader, victim);
  expect_healthy_read(reader, other, 32);
  victim.stop();
}

// A reader SIGKILLed mid-transfer (it streams without pause, so the kill lands mid-read): the
// holder (this process) stays healthy and serves a reader in this process and a new reader process.
TEST_F(UcxFault, KilledReaderLeavesHolderHealthy) {
  UcxOptions options;
  options.label = "holder-local";
  UcxTransport holder(options);
  void* mem = holder.allocate(64 * kMiB);
  test::fill_pattern(mem, 64 * kMiB, 41);
  std::vector<MemoryRange> ranges;
  for (int i = 0; i < 4; ++i) ranges.push_back({static_cast<char*>(mem) + i * 16 * kMiB, 16 * kMiB});
  {
    const auto exposure = holder.expose(ranges);
    {
      test::ReaderProcess doomed(UCX_PEER_EXE, holder.endpoint(), exposure->descriptors(), 16 * kMiB);
      doomed.signal(SIGKILL);
    }
    options.label = "reader";
    UcxTransport reader(options);
    std::vector<test::Region> regions;
    for (const auto& d : exposure->descriptors()) regions.push_back({holder.endpoint(), d, 16 * kMiB});
    std::vector<std::uint64_t> dst(64 * kMiB / 8);
    auto* p = reinterpret_cast<unsigned char*>(dst.data());
    const auto done = test::read_regions(reader, regions, p, kChunk, 8, std::chrono::seconds(20));
    ASSERT_EQ(done.size(), 16u);
    for (const auto& c : done) ASSERT_TRUE(c.ok) << c.error;
    EXPECT_TRUE(test::check_pattern(p, 0, 64 * kMiB, 41));
    // And a fresh reader process streams from it again.
    test::ReaderProcess next(UCX_PEER_EXE, holder.endpoint(), exposure->descriptors(), 16 * kMiB);
  }
  holder.deallocate(mem);
}

// Four reader processes stream from this holder while a busy loop competes for the CPU; each
// iteration SIGKILLs one of them and starts a replacement, which returns only after a full,
// verified pass: the holder survives every kill and serves the next reader every time.
// TENSORHUB_TEST_READER_KILLS sets the number of kills (default 50).
TEST_F(UcxFault, FourReadersOneKilledPerIterationUnderLoad) {
  const auto kills = static_cast<int>(std::strtol(
      std::getenv("TENSORHUB_TEST_READER_KILLS") != nullptr ? std::getenv("TENSORHUB_TEST_READER_KILLS") : "50",
      nullptr, 10));
  alarm(static_cast<unsigned>(60 + kills * 4));
  test::CpuHog hog;
  UcxOptions options;
  options.label = "holder-local";
  UcxTransport holder(options);
  constexpr std::uint64_t kBytes = 16 * kMiB;
  void* mem = holder.allocate(kBytes);
  test::fill_pattern(mem, kBytes, 43);
  std::vector<MemoryRange> ranges;
  for (int i = 0; i < 4; ++i) ranges.push_back({static_cast<char*>(mem) + i * kBytes / 4, kBytes / 4});
  {
    const auto exposure = holder.expose(ranges);
    std::vector<std::unique_ptr<test::ReaderProcess>> readers;
    for (int i = 0; i < 4; ++i) {
      readers.push_back(
          std::make_unique<test::ReaderProcess>(UCX_PEER_EXE, holder.endpoint(), exposure->descriptors(), kBytes / 4));
    }
    const auto start = Clock::now();
    for (int k = 0; k < kills; ++k) {
      auto& victim = readers[static_cast<std::size_t>(k) % readers.size()];
      victim->signal(SIGKILL);
      victim =
          std::make_unique<test::ReaderProcess>(UCX_PEER_EXE, holder.endpoint(), exposure->descriptors(), kBytes / 4);
      ASSERT_EQ(holder.stats().am_dropped, 0u);
    }
    const auto s = holder.stats();
    std::printf(
        "[ measured ] %d reader kills beside a busy loop in %.1f s: holder alive, %llu pieces served, %llu "
        "refused, %llu dropped, %zu replies in flight\n",
        kills, ms_since(start) / 1000.0, static_cast<unsigned long long>(s.am_served),
        static_cast<unsigned long long>(s.am_refused), static_cast<unsigned long long>(s.am_dropped),
        s.am_replies_in_flight);
    EXPECT_EQ(s.am_refused, 0u);
    EXPECT_LE(s.am_replies_in_flight, 5 * 16u);  // at most the live readers' windows, and the dead one's
  }
  holder.deallocate(mem);
}

}  // namespace
}  // namespace tensorhub::transport
