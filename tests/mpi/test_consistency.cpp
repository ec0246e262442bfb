// Group-consistent `latest` under racing publishes (5 ranks: 0 coordinator, 1 publisher,
// 2-3 one reading group, 4 a solo reader). The publisher commits versions as fast as it can and
// unpublishes old ones; every reader pulls `latest` 200 times. Checked: both ranks of the group
// got the same version on every pull, versions never go backwards, and no buffer ever holds a
// word of another version (no torn read), besides the per-chunk checksums the hub verifies.
#include <gtest/gtest.h>
#include <mpi.h>

#include "pattern.hpp"
#include "tensorhub/hub.hpp"
#include "tensorhub/mpi/mpi.hpp"

namespace tensorhub {
namespace {

constexpr int kPulls = 200;
constexpr int kStopTag = 77;

TEST(Consistency, GroupLatestUnderConcurrentPublishes) {
  int rank = 0;
  int size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  ASSERT_EQ(size, 5);
  HubOptions opt;
  opt.chunk_bytes = 16384;  // several chunks per tensor
  opt.pool_bytes = 1 << 20;
  auto hub = Hub::join(MPI_COMM_WORLD, opt);
  const bool group_member = rank == 2 || rank == 3;
  mpi::Comm group = mpi::Comm::split(MPI_COMM_WORLD, group_member ? 0 : MPI_UNDEFINED, rank);

  std::vector<long long> seen;
  if (rank == 1) {
    // Two buffers in turn: a version's memory stays untouched until it is unpublished.
    test::Buffers a(*hub, 4, 48 * 1024, "t");
    test::Buffers b(*hub, 4, 48 * 1024, "t");
    std::uint64_t v = 0;
    int stopped = 0;
    while (stopped < 3) {
      ++v;
      auto& buf = v % 2 ? a : b;
      if (v > 2) hub->unpublish("s", v - 2);  // waits for its readers
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
    seen.push_back(static_cast<long long>(v));
  } else if (rank >= 2) {
    test::Buffers dst(*hub, 4, 48 * 1024, "t");
    PullOptions po;
    if (group_member) po.group = Group::of(group.get(), "rollout-A");
    ASSERT_TRUE(hub->wait_for("s", std::nullopt, std::chrono::seconds(60)).has_value());
    std::size_t torn = 0;
    for (int i = 0; i < kPulls; ++i) {
      const auto r = hub->pull("s", Version::latest(), dst.tensors, po);
      torn += dst.mismatches(r.version);
      if (!seen.empty()) {
        EXPECT_GE(static_cast<long long>(r.version), seen.back());
      }
      seen.push_back(static_cast<long long>(r.version));
    }
    EXPECT_EQ(torn, 0u) << "words from another version found in pulled buffers";
    MPI_Send(nullptr, 0, MPI_BYTE, 1, kStopTag, MPI_COMM_WORLD);
  }
  if (group_member) {
    std::vector<long long> other(seen.size());
    const int peer = rank == 2 ? 1 : 0;  // rank in the group communicator
    MPI_Sendrecv(seen.data(), kPulls, MPI_LONG_LONG, peer, 0, other.data(), kPulls, MPI_LONG_LONG, peer, 0, group.get(),
                 MPI_STATUS_IGNORE);
    EXPECT_EQ(seen, other) << "the two ranks of one reading group pulled different versions";
    if (rank == 2) {
      std::printf("group pulled %d times; versions %lld..%lld\n", kPulls, seen.front(), seen.back());
    }
  }
  if (rank == 1) std::printf("publisher committed %lld versions\n", seen.back());
  mpi::sleepy_barrier(MPI_COMM_WORLD);
  hub->close();
}

}  // namespace
}  // namespace tensorhub
