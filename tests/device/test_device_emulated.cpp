// The emulated device: copies round trip, pointer queries give the allocation, stream work is
// deferred until synchronized (a missing synchronization shows as stale bytes), bad arguments
// are refused, and a host dereference of a device pointer crashes.
#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>
#include <vector>

#include "tensorhub/core/error.hpp"
#include "tensorhub/device/emulated.hpp"

namespace td = tensorhub::device;
using tensorhub::UserError;

namespace {

std::vector<std::uint8_t> pattern(std::size_t n, std::uint8_t start) {
  std::vector<std::uint8_t> v(n);
  std::iota(v.begin(), v.end(), start);
  return v;
}

class EmulatedDevice : public ::testing::Test {
 protected:
  std::unique_ptr<td::Device> dev = td::make_emulated_device(std::size_t{1} << 30);
};

}  // namespace

TEST_F(EmulatedDevice, CopiesRoundTripHostDeviceDeviceHost) {
  auto stream = dev->create_stream();
  const auto src = pattern(100000, 7);
  auto a = dev->allocate(src.size());
  auto b = dev->allocate(src.size());
  std::vector<std::uint8_t> back(src.size(), 0);
  dev->copy_async(a.get(), src.data(), src.size(), td::CopyKind::kHostToDevice, stream);
  dev->copy_async(b.get(), a.get(), src.size(), td::CopyKind::kDeviceToDevice, stream);
  dev->fill_async(static_cast<std::uint8_t*>(b.get()) + 10, 0xEE, 5, stream);
  dev->copy_async(back.data(), b.get(), src.size(), td::CopyKind::kDeviceToHost, stream);
  stream.synchronize();
  auto expect = src;
  std::fill(expect.begin() + 10, expect.begin() + 15, std::uint8_t{0xEE});
  EXPECT_EQ(back, expect);
}

TEST_F(EmulatedDevice, WorkIsDeferredUntilSynchronized) {
  auto stream = dev->create_stream();
  const auto src = pattern(4096, 1);
  auto a = dev->allocate(src.size());
  std::vector<std::uint8_t> back(src.size(), 0);
  dev->copy_async(a.get(), src.data(), src.size(), td::CopyKind::kHostToDevice, stream);
  dev->copy_async(back.data(), a.get(), src.size(), td::CopyKind::kDeviceToHost, stream);
  EXPECT_EQ(back, std::vector<std::uint8_t>(src.size(), 0)) << "stream work ran before any synchronization";
  auto event = dev->create_event();
  event.record(stream);
  event.synchronize();
  EXPECT_EQ(back, src);
}

TEST_F(EmulatedDevice, EventOrdersTwoStreams) {
  auto s1 = dev->create_stream();
  auto s2 = dev->create_stream();
  const auto src = pattern(8192, 3);
  auto a = dev->allocate(src.size());
  std::vector<std::uint8_t> back(src.size(), 0);
  dev->copy_async(a.get(), src.data(), src.size(), td::CopyKind::kHostToDevice, s1);
  auto done = dev->create_event();
  done.record(s1);
  done.make_wait(s2);
  dev->copy_async(back.data(), a.get(), src.size(), td::CopyKind::kDeviceToHost, s2);
  s2.synchronize();  // runs s1's copy first, through the event
  EXPECT_EQ(back, src);
  EXPECT_TRUE(done.ready());
}

TEST_F(EmulatedDevice, QueryGivesTheAllocationOfAnInteriorPointer) {
  auto a = dev->allocate(3 << 20);
  auto* inner = static_cast<std::uint8_t*>(a.get()) + 12345;
  const td::PointerInfo info = dev->query(inner);
  EXPECT_TRUE(info.is_device);
  EXPECT_EQ(info.ordinal, 0);
  EXPECT_EQ(info.base, a.get());
  EXPECT_EQ(info.size, std::size_t{3} << 20);
  int on_stack = 0;
  EXPECT_FALSE(dev->query(&on_stack).is_device);
  EXPECT_FALSE(dev->query(static_cast<std::uint8_t*>(a.get()) + (3 << 20)).is_device);  // one past the end
}

TEST_F(EmulatedDevice, FreedAddressesAreReusedAndNoLongerDevice) {
  void* first = nullptr;
  {
    auto a = dev->allocate(1 << 20);
    first = a.get();
  }
  EXPECT_FALSE(dev->query(first).is_device);
  auto b = dev->allocate(1 << 20);
  EXPECT_EQ(b.get(), first);  // first fit in the reserved range
}

TEST_F(EmulatedDevice, RefusesWrongSidesAndOverruns) {
  auto stream = dev->create_stream();
  auto a = dev->allocate(1024);
  std::vector<std::uint8_t> host(2048);
  EXPECT_THROW(dev->copy_async(host.data(), host.data(), 16, td::CopyKind::kHostToDevice, stream), UserError);
  EXPECT_THROW(dev->copy_async(a.get(), a.get(), 16, td::CopyKind::kHostToDevice, stream), UserError);
  EXPECT_THROW(dev->copy_async(host.data(), a.get(), 1025, td::CopyKind::kDeviceToHost, stream), UserError);
  EXPECT_THROW(dev->fill_async(static_cast<std::uint8_t*>(a.get()) + 1000, 0, 25, stream), UserError);
  EXPECT_THROW(dev->allocate(0), UserError);
  EXPECT_THROW(dev->export_ipc(host.data()), UserError);
}

TEST_F(EmulatedDevice, WorkOnAFreedAllocationFailsAtSynchronize) {
  auto stream = dev->create_stream();
  std::vector<std::uint8_t> host(64, 1);
  {
    auto a = dev->allocate(64);
    dev->copy_async(a.get(), host.data(), host.size(), td::CopyKind::kHostToDevice, stream);
  }
  EXPECT_THROW(stream.synchronize(), UserError);
  EXPECT_NO_THROW(stream.synchronize());  // reported once
}

TEST(EmulatedDeviceDeathTest, HostDereferenceOfADevicePointerCrashes) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  auto dev = td::make_emulated_device(std::size_t{1} << 30);
  auto a = dev->allocate(4096);
  auto* p = static_cast<volatile std::uint8_t*>(a.get());
  EXPECT_DEATH(
      {
        std::uint8_t v = p[0];
        (void)v;
      },
      "");
  EXPECT_DEATH({ p[100] = 1; }, "");
}

TEST(IpcHandleCodec, RoundTripsAndRefusesMalformedText) {
  td::IpcHandle h;
  h.backend = td::BackendKind::kCuda;
  h.ordinal = 3;
  h.size = 1 << 30;
  h.offset = 4096;
  for (std::size_t i = 0; i < h.bytes.size(); ++i) h.bytes[i] = static_cast<std::uint8_t>(i * 7);
  const std::string text = h.encode();
  const td::IpcHandle back = td::IpcHandle::decode(text);
  EXPECT_EQ(back.backend, h.backend);
  EXPECT_EQ(back.ordinal, 3);
  EXPECT_EQ(back.size, h.size);
  EXPECT_EQ(back.offset, h.offset);
  EXPECT_EQ(back.bytes, h.bytes);
  EXPECT_THROW(td::IpcHandle::decode(""), UserError);
  EXPECT_THROW(td::IpcHandle::decode(text.substr(0, text.size() - 2)), UserError);
  std::string bad = text;
  bad[10] = 'Z';
  EXPECT_THROW(td::IpcHandle::decode(bad), UserError);
  bad = text;
  bad[7] = '0';
  bad[8] = '9';  // backend 9
  EXPECT_THROW(td::IpcHandle::decode(bad), UserError);
  td::IpcHandle past = h;
  past.offset = past.size;
  EXPECT_THROW(td::IpcHandle::decode(past.encode()), UserError);
}

TEST_F(EmulatedDevice, DestroyingAStreamCompletesItsWork) {
  const auto src = pattern(512, 9);
  auto a = dev->allocate(src.size());
  std::vector<std::uint8_t> back(src.size(), 0);
  {
    auto stream = dev->create_stream();
    dev->copy_async(a.get(), src.data(), src.size(), td::CopyKind::kHostToDevice, stream);
    dev->copy_async(back.data(), a.get(), src.size(), td::CopyKind::kDeviceToHost, stream);
  }  // like cudaStreamDestroy: queued work still runs
  EXPECT_EQ(back, src);
}
