// Device tensors over MPI (3 ranks, label gpu-emu, TENSORHUB_DEVICE=emulated): rank 0 publishes
// host memory of its mpi_rma pool, rank 1 pulls into device memory of its hub's device. mpi_rma
// cannot write device memory, so the chunks go through the reader's host bounce ring and a
// host-to-device copy, and are verified on the device; the emulated device crashes on any host
// access of device memory. A chunk changed after publish is caught by the device checksum.
// Device memory published is read through device_ipc: device-to-device, nothing bounced.
#include <gtest/gtest.h>
#include <mpi.h>

#include <vector>

#include "pattern.hpp"
#include "tensorhub/hub.hpp"
#include "tensorhub/mpi/mpi.hpp"

namespace tensorhub {
namespace {

using test::Buffers;

constexpr std::uint64_t kBytes = 3 * (1 << 20) + 4096;  // chunks of 1 MiB: one partial chunk

int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

HubOptions device_options() {
  HubOptions o;
  o.transport = "mpi_rma";
  o.pool_bytes = 32ull << 20;
  o.chunk_bytes = 1 << 20;
  o.device = "emulated";
  return o;
}

// `count` device tensors of the hub's device.
std::vector<Tensor> device_tensors(Hub& hub, std::size_t count) {
  std::vector<Tensor> out;
  for (std::size_t t = 0; t < count; ++t) {
    Tensor x = host_tensor("w" + std::to_string(t), DType::kF32, {static_cast<std::int64_t>(kBytes / 4)},
                           hub.allocate_device(kBytes));
    x.memory = MemoryKind::kCuda;
    out.push_back(x);
  }
  return out;
}

// Words of the device tensors that do not hold `version`'s pattern (copied to host to count).
std::size_t device_mismatches(Hub& hub, const std::vector<Tensor>& dev, std::uint64_t version) {
  std::size_t bad = 0;
  std::vector<std::uint64_t> host(kBytes / 8);
  for (std::size_t t = 0; t < dev.size(); ++t) {
    hub.copy_memory(host.data(), MemoryKind::kHost, dev[t].data, MemoryKind::kCuda, kBytes);
    for (std::size_t i = 0; i < host.size(); ++i) bad += host[i] != test::pattern_word(version, t, i);
  }
  return bad;
}

TEST(HubDevice, HostSourceToDeviceDestinationOverMpiRma) {
  auto hub = Hub::join(MPI_COMM_WORLD, device_options());
  const int rank = world_rank();
  EXPECT_NE(hub->device_name().find("emulated"), std::string::npos);
  Buffers src(*hub, 2, kBytes);
  if (rank == 0) {
    src.fill(1);
    hub->publish("m", 1, src.tensors);
  }
  mpi::sleepy_barrier(MPI_COMM_WORLD);
  if (rank == 1) {
    const auto dev = device_tensors(*hub, 2);
    const auto r = hub->pull("m", Version::latest(), dev);
    EXPECT_EQ(r.bytes, 2 * kBytes);
    EXPECT_EQ(r.bounced_bytes, 2 * kBytes) << "mpi_rma cannot write device memory: bounced";
    EXPECT_EQ(device_mismatches(*hub, dev, 1), 0u);
    for (const auto& t : dev) hub->deallocate(t.data);
  }
  mpi::sleepy_barrier(MPI_COMM_WORLD);
  if (rank == 0) hub->unpublish("m", 1);
  hub->close();
}

TEST(HubDevice, CorruptChunkIsCaughtByTheDeviceChecksum) {
  auto hub = Hub::join(MPI_COMM_WORLD, device_options());
  const int rank = world_rank();
  Buffers src(*hub, 1, kBytes);
  if (rank == 0) {
    src.fill(2);
    hub->publish("m", 2, src.tensors);
    src.data[0][(1 << 20) / 8 + 5] ^= 1;  // chunk 1 changes under the reference
  }
  mpi::sleepy_barrier(MPI_COMM_WORLD);
  if (rank == 1) {
    const auto dev = device_tensors(*hub, 1);
    EXPECT_THROW(hub->pull("m", Version::latest(), dev), ChecksumError);
  }
  mpi::sleepy_barrier(MPI_COMM_WORLD);
  if (rank == 0) hub->unpublish("m", 2);
  hub->close();
}

// Device source, device and host destinations, through device_ipc (same host): the reader
// opens the holder's allocation and copies device-to-device (nothing bounced) or
// device-to-host; the publisher's checksums were computed on its device.
TEST(HubDevice, DeviceSourceThroughDeviceIpc) {
  auto o = device_options();
  o.transport = "mpi_rma,device_ipc";
  auto hub = Hub::join(MPI_COMM_WORLD, o);
  const int rank = world_rank();
  std::vector<Tensor> src;
  if (rank == 0) {
    src = device_tensors(*hub, 2);
    Buffers pattern(*hub, 2, kBytes);
    pattern.fill(3);
    for (std::size_t t = 0; t < src.size(); ++t) {
      hub->copy_memory(src[t].data, MemoryKind::kCuda, pattern.tensors[t].data, MemoryKind::kHost, kBytes);
    }
    hub->publish("m", 3, src);
  }
  mpi::sleepy_barrier(MPI_COMM_WORLD);
  if (rank == 1) {
    const auto dev = device_tensors(*hub, 2);
    PullOptions po;
    po.relay = false;
    const auto r = hub->pull("m", Version::latest(), dev, po);
    EXPECT_EQ(r.bytes, 2 * kBytes);
    EXPECT_EQ(r.bounced_bytes, 0u) << "device_ipc writes device memory itself";
    EXPECT_EQ(device_mismatches(*hub, dev, 3), 0u);
    Buffers host(*hub, 2, kBytes);
    hub->pull("m", Version::latest(), host.tensors, po);
    EXPECT_EQ(host.mismatches(3), 0u);
  }
  mpi::sleepy_barrier(MPI_COMM_WORLD);
  if (rank == 0) hub->unpublish("m", 3);
  hub->close();
}

// Relay from device buffers: rank 1 pulls into device memory (relay on), which exposes it on
// device_ipc; once the publisher is gone, rank 2 reads every byte from rank 1's device memory.
TEST(HubDevice, RelayFromDeviceBuffersThroughDeviceIpc) {
  auto o = device_options();
  o.transport = "mpi_rma,device_ipc";
  auto hub = Hub::join(MPI_COMM_WORLD, o);
  const int rank = world_rank();
  Buffers src(*hub, 2, kBytes);
  if (rank == 0) {
    src.fill(4);
    hub->publish("m", 4, src.tensors);
  }
  mpi::sleepy_barrier(MPI_COMM_WORLD);
  std::vector<Tensor> dev;
  if (rank >= 1) dev = device_tensors(*hub, 2);
  if (rank == 1) {
    const auto r = hub->pull("m", Version::latest(), dev);
    EXPECT_EQ(r.bounced_bytes, 2 * kBytes) << "from host memory over mpi_rma";
  }
  mpi::sleepy_barrier(MPI_COMM_WORLD);
  if (rank == 0) hub->unpublish("m", 4);  // rank 1's relay holds every chunk
  mpi::sleepy_barrier(MPI_COMM_WORLD);
  if (rank == 2) {
    const auto r = hub->pull("m", Version::latest(), dev);
    EXPECT_EQ(r.relay_bytes, 2 * kBytes);
    EXPECT_EQ(r.bounced_bytes, 0u) << "device-to-device from the relay's device buffers";
    EXPECT_EQ(device_mismatches(*hub, dev, 4), 0u);
  }
  mpi::sleepy_barrier(MPI_COMM_WORLD);
  hub->close();
}

}  // namespace
}  // namespace tensorhub
