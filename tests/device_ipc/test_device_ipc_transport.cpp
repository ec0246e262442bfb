// The device_ipc transport between two processes on the emulated device (TENSORHUB_DEVICE=
// emulated, label gpu-emu): a forked holder exposes device memory; this process reads it
// device-to-device into its own device buffers and device-to-host into host memory, and checks
// the bytes through device-to-host copies. The emulator maps device addresses PROT_NONE, so a
// host access to device memory anywhere on the way would crash the test.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "cma/cma_transport.hpp"
#include "device_ipc/device_ipc_transport.hpp"
#include "device_ipc/reads.hpp"
#include "forked_device_holder.hpp"
#include "local/local_transport.hpp"
#include "multi/multi_transport.hpp"
#include "tensorhub/core/error.hpp"

namespace tensorhub::transport {
namespace {

using test::device_pattern_words;
using test::ForkedDeviceHolder;
constexpr std::uint64_t kMiB = 1ull << 20;
constexpr std::uint32_t kSeed = 5;

std::vector<Completion> wait_all(Transport& t, std::size_t n) {
  std::vector<Completion> done;
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (done.size() < n && std::chrono::steady_clock::now() < end) t.poll(done);
  EXPECT_EQ(done.size(), n) << "reads did not complete";
  return done;
}

// The bytes of device memory at `p`, through a device-to-host copy.
std::vector<std::uint64_t> to_host(device::Device& dev, const void* p, std::uint64_t bytes) {
  std::vector<std::uint64_t> out(bytes / 8);
  auto s = dev.create_stream();
  dev.copy_async(out.data(), p, bytes, device::CopyKind::kDeviceToHost, s);
  s.synchronize();
  return out;
}

class DeviceIpcTest : public ::testing::Test {
 protected:
  void SetUp() override {
    holder_ = std::make_unique<ForkedDeviceHolder>(8, 4, kSeed);  // forked before this process's device
    device_ = device::make_device_from_env();
    DeviceIpcOptions o;
    o.chunk = 256 << 10;  // several chunks per read
    reader_ = std::make_unique<DeviceIpcTransport>(*device_, o);
  }
  std::unique_ptr<ForkedDeviceHolder> holder_;
  std::unique_ptr<device::Device> device_;
  std::unique_ptr<DeviceIpcTransport> reader_;
};

TEST_F(DeviceIpcTest, ReadsDeviceToDeviceAndDeviceToHost) {
  ASSERT_TRUE(reader_->reaches(holder_->endpoint()));
  const std::uint64_t part = holder_->part();
  const auto& d = holder_->descriptors();
  EXPECT_TRUE(reader_->can_read_into(holder_->endpoint(), d[0], MemoryKind::kCuda));
  EXPECT_TRUE(reader_->can_read_into(holder_->endpoint(), d[0], MemoryKind::kHost));
  auto dbuf = device_->allocate(2 * part);
  std::vector<std::uint64_t> hbuf(part / 8);
  // Whole range 1 device-to-device; range 2 from byte 4096 device-to-device; range 3 to host.
  ReadOp a{holder_->endpoint(), d[1], 0, dbuf.get(), part, 1};
  a.dst_memory = MemoryKind::kCuda;
  ReadOp b{holder_->endpoint(), d[2], 4096, static_cast<char*>(dbuf.get()) + part, part - 4096, 2};
  b.dst_memory = MemoryKind::kCuda;
  ReadOp c{holder_->endpoint(), d[3], 0, hbuf.data(), part, 3};
  for (const auto& op : {a, b, c}) reader_->post(op);
  for (const auto& done : wait_all(*reader_, 3)) EXPECT_TRUE(done.ok) << done.error;
  EXPECT_EQ(reader_->in_flight(), 0u);
  EXPECT_EQ(to_host(*device_, dbuf.get(), part), device_pattern_words(part, part, kSeed));
  EXPECT_EQ(to_host(*device_, static_cast<char*>(dbuf.get()) + part, part - 4096),
            device_pattern_words(2 * part + 4096, part - 4096, kSeed));
  EXPECT_EQ(hbuf, device_pattern_words(3 * part, part, kSeed));
  // Again (the holder's allocation is opened once and cached).
  reader_->post(a);
  EXPECT_TRUE(wait_all(*reader_, 1).at(0).ok);
  EXPECT_EQ(reader_->cached_imports(), 1u);
}

TEST_F(DeviceIpcTest, IdleImportIsClosedOnceWithdrawn) {
  auto dbuf = device_->allocate(holder_->part());
  ReadOp op{holder_->endpoint(), holder_->descriptors()[0], 0, dbuf.get(), holder_->part(), 1};
  op.dst_memory = MemoryKind::kCuda;
  reader_->post(op);
  EXPECT_TRUE(wait_all(*reader_, 1).at(0).ok);
  std::vector<Completion> none;
  std::this_thread::sleep_for(2 * device_ipc::Reads::kSweepInterval);
  reader_->poll(none);
  EXPECT_EQ(reader_->cached_imports(), 1u);  // still exposed: kept
  holder_->withdraw();
  std::this_thread::sleep_for(2 * device_ipc::Reads::kSweepInterval);
  reader_->poll(none);
  EXPECT_EQ(reader_->cached_imports(), 0u);
  EXPECT_TRUE(none.empty());
}

TEST_F(DeviceIpcTest, RefusesBadReads) {
  const auto& d = holder_->descriptors();
  const auto ep = holder_->endpoint();
  auto dbuf = device_->allocate(4096);
  std::vector<std::uint8_t> host(4096);
  ReadOp past{ep, d[0], holder_->part() - 8, dbuf.get(), 16, 1};
  past.dst_memory = MemoryKind::kCuda;
  EXPECT_THROW(reader_->post(past), TransportError);
  ReadOp host_as_device{ep, d[0], 0, host.data(), 4096, 2};
  host_as_device.dst_memory = MemoryKind::kCuda;  // a host buffer said to be device memory
  EXPECT_THROW(reader_->post(host_as_device), TransportError);
  ReadOp device_as_host{ep, d[0], 0, dbuf.get(), 4096, 3};  // dst_memory kHost, a device buffer
  EXPECT_THROW(reader_->post(device_as_host), TransportError);
  ReadOp too_long{ep, d[0], 0, dbuf.get(), 8192, 4};  // past the end of the destination
  too_long.dst_memory = MemoryKind::kCuda;
  EXPECT_THROW(reader_->post(too_long), TransportError);
  EXPECT_THROW(reader_->post(ReadOp{ep, "dipc:garbage", 0, host.data(), 8, 5}), TransportError);
  EXPECT_THROW(reader_->post(ReadOp{"cma:x", d[0], 0, host.data(), 8, 6}), TransportError);
  EXPECT_EQ(reader_->in_flight(), 0u);
  // Host memory is not exposed on this path (cma/local take it).
  EXPECT_FALSE(reader_->can_expose(MemoryRange{host.data(), host.size(), MemoryKind::kHost}));
  EXPECT_FALSE(reader_->can_expose(MemoryRange{host.data(), host.size(), MemoryKind::kCuda}));
  EXPECT_TRUE(reader_->can_expose(MemoryRange{dbuf.get(), 4096, MemoryKind::kCuda}));
  EXPECT_FALSE(reader_->can_expose(MemoryRange{dbuf.get(), 8192, MemoryKind::kCuda}));  // past the allocation
  const MemoryRange host_range{host.data(), host.size(), MemoryKind::kHost};
  EXPECT_THROW(reader_->expose({&host_range, 1}), UserError);
  EXPECT_FALSE(reader_->reaches("cma:x"));
}

TEST_F(DeviceIpcTest, WithdrawnExposureIsNotRead) {
  holder_->withdraw();
  auto dbuf = device_->allocate(holder_->part());
  device::Stream s = device_->create_stream();
  device_->fill_async(dbuf.get(), 0x77, holder_->part(), s);
  s.synchronize();
  ReadOp op{holder_->endpoint(), holder_->descriptors()[0], 0, dbuf.get(), holder_->part(), 9};
  op.dst_memory = MemoryKind::kCuda;
  reader_->post(op);
  const auto done = wait_all(*reader_, 1);
  EXPECT_FALSE(done.at(0).ok);
  EXPECT_NE(done[0].error.find("withdrawn"), std::string::npos) << done[0].error;
  EXPECT_EQ(to_host(*device_, dbuf.get(), holder_->part()),
            std::vector<std::uint64_t>(holder_->part() / 8, 0x7777777777777777ull));  // untouched
}

TEST_F(DeviceIpcTest, ReadsItsOwnExposure) {
  auto src = device_->allocate(64 << 10);
  const auto words = device_pattern_words(0, 64 << 10, 9);
  auto s = device_->create_stream();
  device_->copy_async(src.get(), words.data(), 64 << 10, device::CopyKind::kHostToDevice, s);
  s.synchronize();
  const MemoryRange r{src.get(), 64 << 10, MemoryKind::kCuda};
  auto e = reader_->expose({&r, 1});
  auto dst = device_->allocate(64 << 10);
  ReadOp op{reader_->endpoint(), e->descriptors()[0], 0, dst.get(), 64 << 10, 1};
  op.dst_memory = MemoryKind::kCuda;
  reader_->post(op);
  EXPECT_TRUE(wait_all(*reader_, 1).at(0).ok);
  EXPECT_EQ(to_host(*device_, dst.get(), 64 << 10), words);
}

// The multi transport over every same-host path: device memory is routed to device_ipc (the
// host-only paths have no descriptor of it and cannot write device memory), host memory to cma.
TEST_F(DeviceIpcTest, MultiRoutesDeviceMemoryToDeviceIpc) {
  auto make = [&] {
    std::vector<std::unique_ptr<Transport>> paths;
    paths.push_back(std::make_unique<CmaTransport>());
    paths.push_back(std::make_unique<DeviceIpcTransport>(*device_, DeviceIpcOptions{}));
    return std::make_unique<MultiTransport>(std::move(paths));
  };
  auto holder = make();
  auto reader = make();
  auto dsrc = device_->allocate(1 << 16);
  std::vector<std::uint8_t> hsrc(1 << 16, 0x3c);
  auto s = device_->create_stream();
  device_->fill_async(dsrc.get(), 0xd5, 1 << 16, s);
  s.synchronize();
  const std::vector<MemoryRange> ranges = {{dsrc.get(), 1 << 16, MemoryKind::kCuda},
                                           {hsrc.data(), hsrc.size(), MemoryKind::kHost}};
  auto e = holder->expose(ranges);
  const auto& dev_region = e->descriptors()[0];
  const auto& host_region = e->descriptors()[1];
  EXPECT_TRUE(reader->can_read_into(holder->endpoint(), dev_region, MemoryKind::kCuda));
  EXPECT_TRUE(reader->can_read_into(holder->endpoint(), dev_region, MemoryKind::kHost));
  EXPECT_FALSE(reader->can_read_into(holder->endpoint(), host_region, MemoryKind::kCuda));  // cma only
  EXPECT_TRUE(reader->can_read_into(holder->endpoint(), host_region, MemoryKind::kHost));
  auto ddst = device_->allocate(1 << 16);
  std::vector<std::uint8_t> hdst(1 << 16);
  ReadOp d2d{holder->endpoint(), dev_region, 0, ddst.get(), 1 << 16, 1};
  d2d.dst_memory = MemoryKind::kCuda;
  reader->post(d2d);
  reader->post(ReadOp{holder->endpoint(), dev_region, 0, hdst.data(), 1 << 16, 2});  // D2H
  for (const auto& c : wait_all(*reader, 2)) EXPECT_TRUE(c.ok) << c.error;
  std::vector<std::uint8_t> back(1 << 16);
  device_->copy_async(back.data(), ddst.get(), back.size(), device::CopyKind::kDeviceToHost, s);
  s.synchronize();
  EXPECT_EQ(back, std::vector<std::uint8_t>(1 << 16, 0xd5));
  EXPECT_EQ(hdst, std::vector<std::uint8_t>(1 << 16, 0xd5));
  ReadOp h2d{holder->endpoint(), host_region, 0, ddst.get(), 1 << 16, 3};
  h2d.dst_memory = MemoryKind::kCuda;  // host memory straight into device memory: no path
  EXPECT_THROW(reader->post(h2d), TransportError);
}

}  // namespace
}  // namespace tensorhub::transport
