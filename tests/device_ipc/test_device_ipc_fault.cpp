// A device_ipc holder SIGKILLed while a read of it is in flight (labels fault, gpu-emu): the read
// ends ok=false naming the exit, promptly, without a crash; a holder dead before the read fails
// its reads as completions, not exceptions; the destination is not written after completion.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

#include "device_ipc/device_ipc_transport.hpp"
#include "forked_device_holder.hpp"

namespace tensorhub::transport {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;
constexpr std::uint64_t kMiB = 1ull << 20;

TEST(DeviceIpcFault, HolderKilledMidReadEndsTheReadNotOk) {
  alarm(60);
  test::ForkedDeviceHolder victim(32, 1, 3);
  auto device = device::make_device_from_env();
  DeviceIpcOptions o;
  o.chunk = 64 << 10;  // 512 chunks: a liveness check after each
  DeviceIpcTransport reader(*device, o);
  auto dst = device->allocate(32 * kMiB);
  ReadOp op{victim.endpoint(), victim.descriptors()[0], 0, dst.get(), 32 * kMiB, 1};
  op.dst_memory = MemoryKind::kCuda;
  reader.post(op);
  std::vector<Completion> done;
  for (int i = 0; i < 4 && done.empty(); ++i) reader.poll(done);  // a few chunks copied
  ASSERT_TRUE(done.empty()) << "the read finished before the kill";
  victim.kill();
  const auto killed_at = Clock::now();
  while (done.empty() && Clock::now() - killed_at < 30s) reader.poll(done);
  ASSERT_EQ(done.size(), 1u);
  const double ms = std::chrono::duration<double, std::milli>(Clock::now() - killed_at).count();
  std::printf("measured: the read failed %.2f ms after the kill: %s\n", ms, done[0].error.c_str());
  EXPECT_FALSE(done[0].ok);
  EXPECT_NE(done[0].error.find("exited"), std::string::npos) << done[0].error;
  EXPECT_EQ(reader.in_flight(), 0u);
  // Nothing of the read stays queued: a later copy into the destination is the last word.
  auto s = device->create_stream();
  device->fill_async(dst.get(), 0x11, 32 * kMiB, s);
  s.synchronize();
  reader.poll(done);
  std::vector<std::uint8_t> back(32 * kMiB);
  device->copy_async(back.data(), dst.get(), back.size(), device::CopyKind::kDeviceToHost, s);
  s.synchronize();
  EXPECT_EQ(back, std::vector<std::uint8_t>(32 * kMiB, 0x11));
}

TEST(DeviceIpcFault, DeadHolderFailsReadsWithoutException) {
  alarm(60);
  test::ForkedDeviceHolder victim(1, 2, 3);
  auto device = device::make_device_from_env();
  DeviceIpcTransport reader(*device, DeviceIpcOptions{});
  victim.kill();
  auto dst = device->allocate(kMiB);
  for (std::uint64_t tag = 0; tag < 2; ++tag) {  // never opened, and opened after its death
    ReadOp op{victim.endpoint(), victim.descriptors()[tag], 0, dst.get(), victim.part(), tag};
    op.dst_memory = MemoryKind::kCuda;
    EXPECT_NO_THROW(reader.post(op));
  }
  std::vector<Completion> done;
  const auto end = Clock::now() + 10s;
  while (done.size() < 2 && Clock::now() < end) reader.poll(done);
  ASSERT_EQ(done.size(), 2u);
  for (const auto& c : done) {
    EXPECT_FALSE(c.ok);
    EXPECT_NE(c.error.find("exited"), std::string::npos) << c.error;
  }
}

}  // namespace
}  // namespace tensorhub::transport
