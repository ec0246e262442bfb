// pull_async over mpi_rma from hub worker threads (4 ranks: 0 coordinator, 1 publisher, 2-3 one
// reading group that prefetches). The publisher commits versions as fast as it can, unpublishing
// old ones; each group rank pulls `latest` asynchronously into its two buffer sets in turn,
// "generating" meanwhile, and rank 3 cancels every 7th prefetch. Checked: no buffer holds a word
// of another version (no torn read), both ranks got the same version wherever both completed
// (the group stays in step across cancels), and every unpublish returned (no pin left).
#include <gtest/gtest.h>
#include <mpi.h>

#include <thread>

#include "pattern.hpp"
#include "tensorhub/hub.hpp"
#include "tensorhub/mpi/mpi.hpp"

namespace tensorhub {
namespace {

constexpr int kPulls = 60;
constexpr int kStopTag = 78;

TEST(HubAsync, GroupPrefetchUnderConcurrentPublishes) {
  int rank = 0;
  int size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  ASSERT_EQ(size, 4);
  HubOptions opt;
  opt.chunk_bytes = 16384;
  opt.pool_bytes = 1 << 20;
  auto hub = Hub::join(MPI_COMM_WORLD, opt);
  const bool member = rank >= 2;
  mpi::Comm group = mpi::Comm::split(MPI_COMM_WORLD, member ? 0 : MPI_UNDEFINED, rank);
  std::vector<long long> seen;  // per pull: its version, -1 if cancelled
  if (rank == 1) {
    test::Buffers a(*hub, 4, 48 * 1024, "t");
    test::Buffers b(*hub, 4, 48 * 1024, "t");
    std::uint64_t v = 0;
    int stopped = 0;
    while (stopped < 2) {
      ++v;
      auto& buf = v % 2 ? a : b;
      if (v > 2) hub->unpublish("s", v - 2, std::chrono::seconds(60));
      buf.fill(v);
      hub->publish("s", v, buf.tensors);
      int flag = 0;
      do {
        MPI_Iprobe(MPI_ANY_SOURCE, kStopTag, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
        if (flag) {
          MPI_Recv(nullptr, 0, MPI_BYTE, MPI_ANY_SOURCE, kStopTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
          ++stopped;
        }
      } while (flag);
    }
    std::printf("publisher committed %llu versions\n", static_cast<unsigned long long>(v));
  } else if (member) {
    test::Buffers sets[2] = {test::Buffers(*hub, 4, 48 * 1024, "t"), test::Buffers(*hub, 4, 48 * 1024, "t")};
    PullOptions po;
    po.group = Group::of(group.get(), "prefetchers");
    ASSERT_TRUE(hub->wait_for("s", std::nullopt, std::chrono::seconds(60)).has_value());
    std::size_t torn = 0;
    for (int i = 0; i < kPulls; ++i) {
      auto& set = sets[i % 2];
      auto h = hub->pull_async("s", Version::latest(), set.tensors, po);
      std::this_thread::sleep_for(std::chrono::microseconds(200));  // "generation"
      if (rank == 3 && i % 7 == 3) {
        h.cancel();
        try {
          seen.push_back(static_cast<long long>(h.result().version));  // it ended first
        } catch (const Cancelled&) {
          seen.push_back(-1);
        }
        continue;
      }
      const auto r = h.result();
      torn += set.mismatches(r.version);
      seen.push_back(static_cast<long long>(r.version));
    }
    EXPECT_EQ(torn, 0u) << "words from another version found in pulled buffers";
    MPI_Send(nullptr, 0, MPI_BYTE, 1, kStopTag, MPI_COMM_WORLD);
    std::vector<long long> other(seen.size());
    const int peer = rank == 2 ? 1 : 0;
    MPI_Sendrecv(seen.data(), kPulls, MPI_LONG_LONG, peer, 0, other.data(), kPulls, MPI_LONG_LONG, peer, 0, group.get(),
                 MPI_STATUS_IGNORE);
    int compared = 0;
    for (int i = 0; i < kPulls; ++i) {
      if (seen[i] < 0 || other[i] < 0) continue;
      EXPECT_EQ(seen[i], other[i]) << "pull " << i << ": the group's ranks got different versions";
      ++compared;
    }
    EXPECT_GT(compared, kPulls / 2);
  }
  mpi::sleepy_barrier(MPI_COMM_WORLD);
  hub->close();
}

}  // namespace
}  // namespace tensorhub
