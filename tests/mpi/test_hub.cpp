// Hub over MPI (4 ranks: 0 coordinator, 1 publisher, 2 and 3 readers): bytes arrive intact,
// bad input is rejected without harming the hub, unpublish waits for in-flight reads (the
// publisher overwrites its memory as soon as unpublish returns; the reader must still get
// intact bytes), and a later reader is served by an earlier one (relay).
#include <gtest/gtest.h>
#include <mpi.h>

#include <chrono>
#include <thread>

#include "pattern.hpp"
#include "tensorhub/config.hpp"
#include "tensorhub/hub.hpp"
#include "tensorhub/mpi/mpi.hpp"

namespace tensorhub {
namespace {

using test::Buffers;

int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

// Every rank gets a registered pool large enough for the biggest test below.
HubOptions pooled() {
  HubOptions o;
  o.pool_bytes = 160ull << 20;
  return o;
}

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

TEST(Hub, PublishThenPullGivesIdenticalBytes) {
  auto hub = Hub::join(MPI_COMM_WORLD, pooled());
  const int rank = world_rank();
  Buffers b(*hub, 3, 3 * (1 << 20) + 4096);  // chunks of 4 MiB: one partial chunk per tensor
  if (rank == 1) {
    b.fill(7);
    hub->publish("m", 7, b.tensors);
  }
  mpi::sleepy_barrier(MPI_COMM_WORLD);
  if (rank >= 2) {
    const auto r = hub->pull("m", Version::latest(), b.tensors);
    EXPECT_EQ(r.version, 7u);
    EXPECT_EQ(r.bytes, 3u * (3 * (1 << 20) + 4096));
    EXPECT_EQ(b.mismatches(7), 0u);
  }
  mpi::sleepy_barrier(MPI_COMM_WORLD);
  if (rank == 1) hub->unpublish("m", 7);
  hub->close();
}

TEST(Hub, BadInputIsRejectedAndHubStaysUsable) {
  auto hub = Hub::join(MPI_COMM_WORLD, pooled());
  const int rank = world_rank();
  Buffers b(*hub, 2, 8192);
  if (rank == 1) {
    b.fill(1);
    hub->publish("bad", 1, b.tensors);
    EXPECT_THROW(hub->publish("bad", 1, b.tensors), UserError);  // twice
    std::vector<float> empty;
    const Tensor zero = host_tensor("z", DType::kF32, {0}, empty.data());
    EXPECT_THROW(hub->publish("bad", 2, std::span<const Tensor>(&zero, 1)), UserError);
    EXPECT_THROW(hub->unpublish("bad", 99), NotFoundError);
    EXPECT_THROW(hub->unpublish("nope", 1), NotFoundError);
    std::vector<float> heap(1024);
    const Tensor foreign = host_tensor("f", DType::kF32, {1024}, heap.data());
#if TENSORHUB_HAVE_UCX
    // Not from the pool: the default data paths (mpi_rma + ucx) expose it on ucx alone.
    EXPECT_NO_THROW(hub->publish("bad", 3, std::span<const Tensor>(&foreign, 1)));
    hub->unpublish("bad", 3);
#else
    EXPECT_THROW(hub->publish("bad", 3, std::span<const Tensor>(&foreign, 1)), UserError);  // no path can expose it
#endif
  }
  mpi::sleepy_barrier(MPI_COMM_WORLD);
  if (rank == 2) {
    EXPECT_THROW(hub->pull("nope", Version::latest(), b.tensors), NotFoundError);
    EXPECT_THROW(hub->pull("bad", Version::exact(5), b.tensors), NotFoundError);
    Buffers other(*hub, 1, 8192, "x");
    EXPECT_THROW(hub->pull("bad", Version::latest(), other.tensors), NotFoundError);  // unknown tensor
    Tensor wrong_shape = b.tensors[0];
    wrong_shape.spec.shape = {1024, 2};
    EXPECT_THROW(hub->pull("bad", Version::latest(), std::span<const Tensor>(&wrong_shape, 1)), UserError);
    Tensor wrong_dtype = b.tensors[0];
    wrong_dtype.spec.dtype = DType::kI32;
    EXPECT_THROW(hub->pull("bad", Version::latest(), std::span<const Tensor>(&wrong_dtype, 1)), UserError);
    Tensor small = b.tensors[0];
    small.bytes = 100;
    EXPECT_THROW(hub->pull("bad", Version::latest(), std::span<const Tensor>(&small, 1)), UserError);
    // Still intact: a good pull works.
    EXPECT_EQ(hub->pull("bad", Version::latest(), b.tensors).version, 1u);
    EXPECT_EQ(b.mismatches(1), 0u);
  }
  mpi::sleepy_barrier(MPI_COMM_WORLD);
  if (rank == 1) hub->unpublish("bad", 1);
  hub->close();
}

TEST(Hub, UnpublishWaitsForReadsInFlight) {
  HubOptions opt = pooled();
  opt.inflight = 1;  // a slow, long pull
  auto hub = Hub::join(MPI_COMM_WORLD, opt);
  const int rank = world_rank();
  Buffers b(*hub, 8, 16 << 20);  // 128 MiB
  double pull_end = 0;
  double unpublish_start = 0;
  double unpublish_end = 0;
  if (rank == 1) b.fill(3);
  if (rank == 1) hub->publish("u", 3, b.tensors);
  mpi::sleepy_barrier(MPI_COMM_WORLD);
  if (rank == 2) {
    const auto r = hub->pull("u", Version::exact(3), b.tensors);
    pull_end = now_s();
    EXPECT_EQ(r.version, 3u);
    EXPECT_EQ(b.mismatches(3), 0u);
  }
  if (rank == 1) {
    // Wait until a read pins the version, then unpublish: it must not return before the pull.
    const auto give_up = now_s() + 30;
    bool pinned = false;
    while (!pinned && now_s() < give_up) {
      for (const auto& m : hub->status()) {
        for (const auto& v : m.versions) pinned = pinned || (m.model == "u" && v.version == 3 && v.pins > 0);
      }
      if (!pinned) std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    ASSERT_TRUE(pinned) << "the reader never started reading";
    unpublish_start = now_s();
    hub->unpublish("u", 3);
    unpublish_end = now_s();
    b.fill(99);  // the memory is ours again: a read still in flight would now see version 99
  }
  const auto ends = mpi::gather_double(MPI_COMM_WORLD, 0, rank == 2 ? pull_end : unpublish_end);
  const auto starts = mpi::gather_double(MPI_COMM_WORLD, 0, unpublish_start);
  if (rank == 0) {
    // The pull was still running when unpublish began, so unpublish had to wait for it; the
    // reader's intact bytes (checked above, after the publisher scribbled) show it did.
    EXPECT_GT(ends[2], starts[1]) << "the pull ended before unpublish began: test inconclusive";
    EXPECT_GT(ends[1] - starts[1], 0.0);
  }
  hub->close();
}

TEST(Hub, LaterReaderIsServedByEarlierReader) {
  HubOptions opt = pooled();
  opt.max_readers_per_source = 1;
  auto hub = Hub::join(MPI_COMM_WORLD, opt);
  const int rank = world_rank();
  Buffers b(*hub, 4, 2 << 20);
  if (rank == 1) {
    b.fill(11);
    hub->publish("relay", 11, b.tensors);
  }
  mpi::sleepy_barrier(MPI_COMM_WORLD);
  if (rank == 2) {
    const auto r = hub->pull("relay", Version::latest(), b.tensors);
    EXPECT_EQ(r.origin_bytes, r.bytes);  // the only holder was the publisher
  }
  mpi::sleepy_barrier(MPI_COMM_WORLD);
  if (rank == 3) {
    const auto r = hub->pull("relay", Version::latest(), b.tensors);
    EXPECT_EQ(b.mismatches(11), 0u);
    EXPECT_EQ(r.relay_bytes, r.bytes) << "rank 3 should read everything from rank 2, not the publisher";
    EXPECT_EQ(r.origin_bytes, 0u);
  }
  mpi::sleepy_barrier(MPI_COMM_WORLD);
  if (rank == 1) hub->unpublish("relay", 11);
  hub->close();
}

}  // namespace
}  // namespace tensorhub
