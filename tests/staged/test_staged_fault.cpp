// A staged holder SIGKILLed while reads of it are in flight, dead before the read, and hung
// (SIGSTOP) (labels fault, gpu-emu): the reads end ok=false, promptly (the connection closes at
// once on a kill; a hung holder after the timeout), without an exception or a crash; nothing is
// written into a destination after its read completed.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <vector>

#include "staged_test_util.hpp"

namespace tensorhub::transport {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;
constexpr std::uint64_t kMiB = 1ull << 20;

TEST(StagedFault, HolderKilledMidReadEndsTheReadNotOk) {
  alarm(60);
  test::ForkedDeviceHolder victim(32, 1, 3, test::staged_holder(test::staged_options(16 << 10, 2, 1)));
  auto device = device::make_device_from_env();
  auto reader = test::make_staged(*device);
  std::vector<std::uint8_t> dst(32 * kMiB);
  reader->post(ReadOp{victim.endpoint(), victim.descriptors()[0], 0, dst.data(), dst.size(), 1});
  std::vector<Completion> done;
  for (int i = 0; i < 20 && done.empty(); ++i) reader->poll(done);  // some pieces read
  ASSERT_TRUE(done.empty()) << "2048 pieces finished before the kill";
  victim.kill();
  const auto killed_at = Clock::now();
  while (done.empty() && Clock::now() - killed_at < 20s) reader->poll(done);
  ASSERT_EQ(done.size(), 1u);
  const double ms = std::chrono::duration<double, std::milli>(Clock::now() - killed_at).count();
  std::printf("measured: the staged read failed %.2f ms after the kill: %s\n", ms, done[0].error.c_str());
  EXPECT_FALSE(done[0].ok);
  EXPECT_LT(ms, 2000.0) << "a killed holder's connection closes at once: no timeout needed";
  EXPECT_EQ(reader->in_flight(), 0u);
  std::fill(dst.begin(), dst.end(), 0x5A);
  for (int i = 0; i < 10; ++i) reader->poll(done);
  EXPECT_EQ(dst, std::vector<std::uint8_t>(32 * kMiB, 0x5A)) << "written after the read completed";
}

TEST(StagedFault, DeadHolderFailsReadsWithoutException) {
  alarm(60);
  test::ForkedDeviceHolder victim(1, 2, 3, test::staged_holder());
  auto device = device::make_device_from_env();
  auto reader = test::make_staged(*device);
  victim.kill();
  std::vector<std::uint8_t> dst(kMiB);
  for (std::uint64_t tag = 0; tag < 2; ++tag) {
    EXPECT_NO_THROW(
        reader->post(ReadOp{victim.endpoint(), victim.descriptors()[tag], 0, dst.data(), victim.part(), tag}));
  }
  const auto done = test::wait_for(*reader, 2, 10s);
  ASSERT_EQ(done.size(), 2u);
  for (const auto& c : done) {
    EXPECT_FALSE(c.ok);
    EXPECT_NE(c.error.find("connect"), std::string::npos) << c.error;
  }
}

TEST(StagedFault, HungHolderFailsAfterTheTimeout) {
  alarm(60);
  test::ForkedDeviceHolder victim(4, 1, 3, test::staged_holder());
  auto device = device::make_device_from_env();
  auto o = test::staged_options();
  o.timeout = 500ms;
  auto reader = test::make_staged(*device, o);
  victim.stop();
  std::vector<std::uint8_t> dst(4 * kMiB);
  const auto posted = Clock::now();
  reader->post(ReadOp{victim.endpoint(), victim.descriptors()[0], 0, dst.data(), dst.size(), 1});
  const auto done = test::wait_for(*reader, 1, 10s);
  const double ms = std::chrono::duration<double, std::milli>(Clock::now() - posted).count();
  victim.resume();
  ASSERT_EQ(done.size(), 1u);
  std::printf("measured: a stopped holder's read failed after %.0f ms (timeout 500 ms): %s\n", ms,
              done[0].error.c_str());
  EXPECT_FALSE(done[0].ok);
  EXPECT_NE(done[0].error.find("within 500 ms"), std::string::npos) << done[0].error;
}

}  // namespace
}  // namespace tensorhub::transport
