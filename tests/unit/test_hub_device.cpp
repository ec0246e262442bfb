// Device tensors through the hub without MPI (label gpu-emu): every hub of the process shares
// one emulated device, whose addresses crash the test on any host access, so a passing test
// also shows that publish, pull, checksums and relays never touched device bytes on the host.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <thread>

#include "device_test_util.hpp"
#include "tensorhub/core/checksum.hpp"
#include "tensorhub/transfer/pull_engine.hpp"

namespace tensorhub::test {
namespace {

using namespace std::chrono_literals;

constexpr std::uint64_t kBytes = 3 * kChunk + 1024;  // three chunks and a short one per tensor

class DeviceHubs : public LocalHubs {
 protected:
  DeviceHubs() : dev_(device::make_device("emulated")) {}
  HubCore& add_device_hub(std::unique_ptr<transport::Transport> t, HubOptions o = small_chunks()) {
    const auto rank = static_cast<int>(hubs_.size());
    hubs_.push_back(std::make_unique<HubCore>(client_, std::move(t), rank, std::move(o), dev_));
    return *hubs_.back();
  }
  HubCore& add_host_only_hub() {
    return add_device_hub(std::make_unique<transport::LocalTransport>("hub" + std::to_string(hubs_.size())));
  }
  DevicePathTransport* add_path_hub(bool direct, HubCore** hub) {
    auto t = std::make_unique<DevicePathTransport>("hub" + std::to_string(hubs_.size()), *dev_, direct);
    auto* raw = t.get();
    *hub = &add_device_hub(std::move(t));
    return raw;
  }
  std::shared_ptr<device::Device> dev_;
};

// Host source, device destination over a host-only path (local: memcpy): the bytes go through
// the bounce ring and a host-to-device copy, and are verified on the device.
TEST_F(DeviceHubs, HostSourceToDeviceThroughTheBounceRing) {
  auto& pub = add_host_only_hub();
  auto& reader = add_host_only_hub();
  Buffers src(2, kBytes);
  src.fill(1);
  pub.publish("m", 1, src.tensors, std::nullopt);
  DeviceBuffers dst(*dev_, 2, kBytes);
  dst.fill(0xEE);
  const auto r = reader.pull("m", Version::latest(), dst.tensors, {});
  EXPECT_EQ(r.bytes, 2 * kBytes);
  EXPECT_EQ(r.bounced_bytes, 2 * kBytes) << "a host-only path cannot write device memory";
  EXPECT_EQ(dst.download().mismatches(1), 0u);
  EXPECT_FALSE(holder("m", 1, reader.worker())) << "no path exposes device memory: no relay";
}

// The same over acquire mode (no plans).
TEST_F(DeviceHubs, BounceRingInAcquireMode) {
  auto& pub = add_host_only_hub();
  auto o = small_chunks();
  o.plan = false;
  o.inflight = 2;
  auto& reader = add_device_hub(std::make_unique<transport::LocalTransport>("r"), o);
  Buffers src(3, kBytes);
  src.fill(4);
  pub.publish("m", 4, src.tensors, std::nullopt);
  DeviceBuffers dst(*dev_, 3, kBytes);
  const auto r = reader.pull("m", Version::latest(), dst.tensors, {});
  EXPECT_FALSE(r.planned);
  EXPECT_EQ(r.bounced_bytes, 3 * kBytes);
  EXPECT_EQ(dst.download().mismatches(4), 0u);
}

// A chunk whose bytes changed after publish is caught by the device checksum (the reader cannot
// hash device memory on the host): the pull fails with ChunksCorrupt, no wrong bytes returned.
TEST_F(DeviceHubs, CorruptChunkDetectedByTheDeviceChecksum) {
  auto& pub = add_host_only_hub();
  auto& reader = add_host_only_hub();
  Buffers src(1, kBytes);
  src.fill(2);
  pub.publish("m", 2, src.tensors, std::nullopt);
  src.data[0][kChunk / 8 + 3] ^= 1;  // chunk 1 of w0 changes under the reference
  DeviceBuffers dst(*dev_, 1, kBytes);
  EXPECT_THROW(reader.pull("m", Version::latest(), dst.tensors, {}), transfer::ChunksCorrupt);
}

// Device memory published: its checksums are computed on the device and equal the CPU's XXH3
// of the same bytes; read into host memory, into device memory directly (the path writes it),
// and into device memory through the bounce ring.
TEST_F(DeviceHubs, DevicePublishToHostAndDeviceReaders) {
  HubCore* pub = nullptr;
  HubCore* direct = nullptr;
  HubCore* bounced = nullptr;
  add_path_hub(true, &pub);
  auto* direct_path = add_path_hub(true, &direct);
  add_path_hub(false, &bounced);
  Buffers pattern(2, kBytes);
  pattern.fill(3);
  DeviceBuffers src(*dev_, 2, kBytes);
  src.upload(pattern);
  pub->publish("m", 3, src.tensors, std::nullopt);
  const auto m = pub->manifest("m", Version::exact(3));
  for (const auto& c : m.chunks) {
    const auto* host = reinterpret_cast<const unsigned char*>(pattern.data[c.tensor].data()) + c.offset;
    EXPECT_EQ(c.checksum, checksum64(ChecksumAlgorithm::kXxh3_64, host, c.length));
  }

  Buffers host_dst(2, kBytes);
  auto& host_reader = add_device_hub(std::make_unique<DevicePathTransport>("h", *dev_, true));
  PullOptions no_relay;
  no_relay.relay = false;
  host_reader.pull("m", Version::latest(), host_dst.tensors, no_relay);
  EXPECT_EQ(host_dst.mismatches(3), 0u);

  DeviceBuffers d1(*dev_, 2, kBytes);
  const auto r1 = direct->pull("m", Version::latest(), d1.tensors, no_relay);
  EXPECT_EQ(r1.bounced_bytes, 0u);
  EXPECT_EQ(direct_path->device_dst_reads.load(), m.chunks.size());
  EXPECT_EQ(d1.download().mismatches(3), 0u);

  DeviceBuffers d2(*dev_, 2, kBytes);
  const auto r2 = bounced->pull("m", Version::latest(), d2.tensors, no_relay);
  EXPECT_EQ(r2.bounced_bytes, 2 * kBytes);
  EXPECT_EQ(d2.download().mismatches(3), 0u);
}

// Retention of a device version: its last holder offloads it to a snapshot (device-to-host
// copies, no host access to device bytes), and readers get it back from the file into device
// buffers (staged through a host buffer) and host buffers.
TEST_F(DeviceHubs, DeviceVersionIsOffloadedAndReadBackIntoDeviceBuffers) {
  namespace fs = std::filesystem;
  std::string dir = (fs::temp_directory_path() / "tensorhub-device-offload-XXXXXX").string();
  ASSERT_NE(mkdtemp(dir.data()), nullptr);
  HubOptions o = small_chunks();
  o.snapshot_dir = dir;
  auto& pub = add_device_hub(std::make_unique<DevicePathTransport>("pub", *dev_, true), o);
  Buffers pattern(2, kBytes);
  pattern.fill(5);
  DeviceBuffers src(*dev_, 2, kBytes);
  src.upload(pattern);
  pub.publish("m", 5, src.tensors, std::nullopt);
  pub.retain("m", 5);
  pub.unpublish("m", 5);  // the last holder: <dir>/m/v5.h5
  ASSERT_TRUE(fs::exists(fs::path(dir) / "m" / "v5.h5"));
  src.upload(Buffers(2, kBytes));  // the device memory is the publisher's again

  HubCore* reader = nullptr;
  add_path_hub(true, &reader);
  DeviceBuffers dst(*dev_, 2, kBytes);
  PullOptions no_relay;
  no_relay.relay = false;
  const auto r = reader->pull("m", Version::exact(5), dst.tensors, no_relay);
  EXPECT_EQ(r.file_bytes, 2 * kBytes);
  EXPECT_EQ(dst.download().mismatches(5), 0u);
  Buffers host_dst(2, kBytes);
  const auto rh = reader->pull("m", Version::exact(5), host_dst.tensors, no_relay);
  EXPECT_EQ(rh.file_bytes, 2 * kBytes);
  EXPECT_EQ(host_dst.mismatches(5), 0u);
  reader->release("m", 5);
  fs::remove_all(dir);
}

// A reader's device destination is exposed like published memory and relayed once the origin
// is gone; its progress bytes stay host memory.
TEST_F(DeviceHubs, RelayFromDeviceBuffers) {
  HubCore* pub = nullptr;
  HubCore* relay = nullptr;
  HubCore* last = nullptr;
  add_path_hub(true, &pub);
  add_path_hub(true, &relay);
  add_path_hub(false, &last);
  Buffers pattern(1, kBytes);
  pattern.fill(5);
  Buffers src(1, kBytes);
  src.fill(5);
  pub->publish("m", 5, src.tensors, std::nullopt);
  DeviceBuffers mid(*dev_, 1, kBytes);
  relay->pull("m", Version::latest(), mid.tensors, {});
  const auto h = holder("m", 5, relay->worker());
  ASSERT_TRUE(h.has_value());
  EXPECT_EQ(h->chunks_held, 4u);
  pub->unpublish("m", 5);
  DeviceBuffers end(*dev_, 1, kBytes);
  const auto r = last->pull("m", Version::latest(), end.tensors, {});
  EXPECT_EQ(r.relay_bytes, kBytes);
  EXPECT_EQ(r.bounced_bytes, kBytes);
  EXPECT_EQ(end.download().mismatches(5), 0u);
}

// A read that keeps failing ends the pull; once pull() returns, the device destination holds,
// per chunk, either its old bytes or the verified new ones, and no write of the pull is left.
TEST_F(DeviceHubs, FailedReadLeavesNoPendingDeviceWrite) {
  auto& pub = add_host_only_hub();
  HubCore* reader = nullptr;
  auto* path = add_path_hub(false, &reader);
  path->fail_offsets = {2 * kChunk};
  Buffers src(1, kBytes);
  src.fill(6);
  pub.publish("m", 6, src.tensors, std::nullopt);
  DeviceBuffers dst(*dev_, 1, kBytes);
  dst.fill(0xEE);
  EXPECT_ANY_THROW(reader->pull("m", Version::latest(), dst.tensors, {}));
  const auto first = dst.download();
  std::this_thread::sleep_for(20ms);
  const auto again = dst.download();
  EXPECT_EQ(first.data, again.data) << "device buffers written after pull returned";
  const auto* bytes = reinterpret_cast<const unsigned char*>(first.data[0].data());
  const auto* want = reinterpret_cast<const unsigned char*>(src.data[0].data());
  for (std::uint64_t off = 0; off < kBytes; off += kChunk) {
    const auto n = std::min(kChunk, kBytes - off);
    const bool fresh = std::memcmp(bytes + off, want + off, n) == 0;
    const bool old = std::all_of(bytes + off, bytes + off + n, [](unsigned char b) { return b == 0xEE; });
    EXPECT_TRUE(fresh || old) << "chunk at " << off << " is torn";
    if (off == 2 * kChunk) {
      EXPECT_TRUE(old) << "the failed chunk was never written";
    }
  }
}

// A cancelled asynchronous pull into device memory: after cancel() returns nothing writes the
// buffers any more.
TEST_F(DeviceHubs, CancelLeavesNoPendingDeviceWrite) {
  auto& pub = add_host_only_hub();
  HubCore* reader = nullptr;
  auto* path = add_path_hub(false, &reader);
  path->delay = 5ms;
  Buffers src(4, 8 * kChunk);
  src.fill(7);
  pub.publish("m", 7, src.tensors, std::nullopt);
  DeviceBuffers dst(*dev_, 4, 8 * kChunk);
  dst.fill(0xEE);
  auto handle = reader->pull_async("m", Version::latest(), dst.tensors, {});
  std::this_thread::sleep_for(30ms);
  handle.cancel();
  const auto first = dst.download();
  std::this_thread::sleep_for(30ms);
  EXPECT_EQ(first.data, dst.download().data) << "device buffers written after cancel returned";
  EXPECT_THROW(handle.result(), Cancelled);
}

// A tensor marked device memory must be memory of the hub's device.
TEST_F(DeviceHubs, HostPointerMarkedCudaIsRefused) {
  auto& pub = add_host_only_hub();
  Buffers src(1, kBytes);
  src.fill(8);
  pub.publish("m", 8, src.tensors, std::nullopt);
  Buffers fake(1, kBytes);
  fake.tensors[0].memory = MemoryKind::kCuda;
  try {
    pub.pull("m", Version::latest(), fake.tensors, {});
    FAIL() << "a host buffer marked cuda was accepted";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("not memory of"), std::string::npos) << e.what();
  }
  EXPECT_THROW(pub.publish("m", 9, fake.tensors, std::nullopt), UserError);
}

}  // namespace
}  // namespace tensorhub::test
