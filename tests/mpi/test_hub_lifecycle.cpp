// Hub over MPI, regressions (4 ranks: 0 runs the coordinator, 1 and 2 publish, 3 reads):
//  * every rank, rank 0 too, reaches the coordinator over gRPC: a bad name gives the same
//    UserError everywhere (bug 9);
//  * after close() every call throws HubClosed on every rank, close() again is a no-op (bug 6);
//  * deallocate() of relayed memory withdraws the relay before the memory is reused (bug 5);
//  * colocated trainer and rollout: each publisher pulls the whole version, its own shard
//    included (bug 4);
//  * a bad TENSORHUB_POOL_BYTES is a UserError naming the variable, on every rank (bug 8);
//  * a second hub in the process, on the first one's coordinator, over paths that cannot reach
//    it (mpi_rma alone: its own window only) is refused at join on every rank; over paths that
//    do reach (ucx), it pulls what the first one published.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <optional>
#include <string>

#include "pattern.hpp"
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

HubOptions pooled() {
  HubOptions o;
  o.pool_bytes = 32ull << 20;
  o.chunk_bytes = 1ull << 20;
  return o;
}

constexpr std::uint64_t kBytes = (2 << 20) + 4096;  // 3 chunks, the last partial

TEST(HubLifecycle, BadModelNameGivesTheSameErrorOnEveryRank) {
  auto hub = Hub::join(MPI_COMM_WORLD, pooled());
  Buffers b(*hub, 1, 8192);
  std::string what;
  try {
    hub->pull("model\xff", Version::latest(), b.tensors);
  } catch (const UserError& e) {
    what = e.what();
  }
  EXPECT_EQ(what, "model name is not valid UTF-8") << "rank " << world_rank();
  try {
    hub->latest("\x01");
    ADD_FAILURE() << "latest of a name with a control character";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("control character"), std::string::npos) << e.what();
  }
  hub->close();
}

TEST(HubLifecycle, EveryCallAfterCloseThrowsHubClosedOnEveryRank) {
  auto hub = Hub::join(MPI_COMM_WORLD, pooled());
  void* p = hub->allocate(8192);
  const Tensor t = host_tensor("w", DType::kF32, {2048}, p);
  const std::span<const Tensor> ts(&t, 1);
  hub->close();
  hub->close();  // no-op, not a second collective
  try {
    hub->latest("m");
    ADD_FAILURE() << "latest after close on rank " << world_rank();
  } catch (const HubClosed& e) {
    EXPECT_STREQ(e.what(), "hub is closed: latest called after Hub::close()");
  }
  EXPECT_THROW(hub->publish("m", 1, ts), HubClosed);
  EXPECT_THROW(hub->unpublish("m", 1), HubClosed);
  EXPECT_THROW(hub->pull("m", Version::latest(), ts), HubClosed);
  EXPECT_THROW(hub->retain("m", 1), HubClosed);
  EXPECT_THROW(hub->release("m", 1), HubClosed);
  EXPECT_THROW(hub->wait_for("m", std::nullopt, std::chrono::milliseconds(1)), HubClosed);
  EXPECT_THROW(hub->manifest("m", Version::latest()), HubClosed);
  EXPECT_THROW(hub->status(), HubClosed);
  EXPECT_THROW(hub->attach_snapshot("/nonexistent.h5"), HubClosed);
  EXPECT_THROW(hub->allocate(4096), HubClosed);
  EXPECT_THROW(hub->deallocate(p), HubClosed);
  EXPECT_THROW(hub->stop_relaying(ts), HubClosed);
  EXPECT_EQ(hub->rank(), world_rank());
  hub.reset();  // the destructor of a closed hub does nothing collective
}

TEST(HubLifecycle, DeallocateWithdrawsTheRelayFirst) {
  HubOptions opt = pooled();
  opt.max_readers_per_source = 1;
  auto hub = Hub::join(MPI_COMM_WORLD, opt);
  const int rank = world_rank();
  if (rank == 1) {
    Buffers src(*hub, 2, kBytes);
    src.fill(4);
    hub->publish("d", 4, src.tensors);
    mpi::sleepy_barrier(MPI_COMM_WORLD);  // published
    mpi::sleepy_barrier(MPI_COMM_WORLD);  // reader A pulled and deallocated
    mpi::sleepy_barrier(MPI_COMM_WORLD);  // reader B pulled
    hub->unpublish("d", 4);
  } else if (rank == 2) {  // reader A: relays, then frees its buffers, which get reused
    mpi::sleepy_barrier(MPI_COMM_WORLD);
    Buffers a(*hub, 2, kBytes);
    hub->pull("d", Version::latest(), a.tensors);
    EXPECT_EQ(a.mismatches(4), 0u);
    for (auto& d : a.data) hub->deallocate(d.data());
    for (auto& d : a.data) std::fill(d.begin(), d.end(), 0xdeadbeefull);  // the next owner's bytes
    mpi::sleepy_barrier(MPI_COMM_WORLD);
    mpi::sleepy_barrier(MPI_COMM_WORLD);
  } else if (rank == 3) {  // reader B, unverified: must get the publisher's bytes
    mpi::sleepy_barrier(MPI_COMM_WORLD);
    mpi::sleepy_barrier(MPI_COMM_WORLD);
    Buffers b(*hub, 2, kBytes);
    PullOptions po;
    po.verify = false;
    po.relay = false;
    hub->pull("d", Version::latest(), b.tensors, po);
    EXPECT_EQ(b.mismatches(4), 0u) << "read memory that its relay had deallocated";
    mpi::sleepy_barrier(MPI_COMM_WORLD);
  } else {
    for (int i = 0; i < 3; ++i) mpi::sleepy_barrier(MPI_COMM_WORLD);
  }
  hub->close();
}

TEST(HubLifecycle, ColocatedPublishersPullTheWholeVersion) {
  auto hub = Hub::join(MPI_COMM_WORLD, pooled());
  const int rank = world_rank();
  const bool trainer = rank == 1 || rank == 2;
  mpi::Comm tc = mpi::Comm::split(MPI_COMM_WORLD, trainer ? 0 : MPI_UNDEFINED, rank);
  Buffers shard(*hub, 2, kBytes, rank == 1 ? "a" : "b");
  if (trainer) {
    shard.fill(rank == 1 ? 7 : 8);
    hub->publish("c", 1, shard.tensors, Group::of(tc.get(), "trainer"));
  }
  mpi::sleepy_barrier(MPI_COMM_WORLD);
  if (trainer || rank == 3) {
    Buffers a(*hub, 2, kBytes, "a");
    Buffers b(*hub, 2, kBytes, "b");
    std::vector<Tensor> all = a.tensors;
    all.insert(all.end(), b.tensors.begin(), b.tensors.end());
    const auto r = hub->pull("c", Version::latest(), all);
    EXPECT_EQ(r.bytes, 4 * kBytes);
    EXPECT_EQ(r.local_bytes, trainer ? 2 * kBytes : 0u);
    EXPECT_EQ(a.mismatches(7), 0u);
    EXPECT_EQ(b.mismatches(8), 0u);
  }
  mpi::sleepy_barrier(MPI_COMM_WORLD);
  if (trainer) hub->unpublish("c", 1);
  hub->close();
}

HubOptions over(const std::string& paths, const std::string& address = {}) {
  HubOptions o = pooled();
  o.transport = paths;
  o.hub_address = address;
  return o;
}

TEST(HubLifecycle, ASecondHubThatCannotReachTheFirstIsRefusedAtJoin) {
  auto first = Hub::join(MPI_COMM_WORLD, over("mpi_rma"));
  std::string what;
  try {
    Hub::join(MPI_COMM_WORLD, over("mpi_rma", first->coordinator_address()));
  } catch (const UserError& e) {
    what = e.what();
  }
  EXPECT_NE(what.find("two hubs in one process"), std::string::npos) << "rank " << world_rank() << ": '" << what << "'";
  // The first hub still works.
  Buffers b(*first, 1, kBytes);
  if (world_rank() == 1) {
    b.fill(3);
    first->publish("solo", 1, b.tensors, std::nullopt);
  }
  mpi::sleepy_barrier(MPI_COMM_WORLD);
  if (world_rank() == 3) {
    Buffers in(*first, 1, kBytes);
    EXPECT_EQ(first->pull("solo", Version::latest(), in.tensors).bytes, kBytes);
    EXPECT_EQ(in.mismatches(3), 0u);
  }
  mpi::sleepy_barrier(MPI_COMM_WORLD);
  if (world_rank() == 1) first->unpublish("solo", 1);
  first->close();
}

TEST(HubLifecycle, ASecondHubOverAPathThatReachesTheFirstPullsItsVersions) {
  // The second hub calls the first one's coordinator: with its token.
  ::setenv("TENSORHUB_TOKEN", "5ec0e7d0c0ffee5ec0e7d0c0ffee5ec0e7d0c0ffee5ec0e7d0c0ffee5ec0e7d0", 1);
  auto first = Hub::join(MPI_COMM_WORLD, over("mpi_rma,ucx"));
  auto second = Hub::join(MPI_COMM_WORLD, over("mpi_rma,ucx", first->coordinator_address()));
  Buffers b(*first, 1, kBytes);
  if (world_rank() == 1) {
    b.fill(5);
    first->publish("solo", 1, b.tensors, std::nullopt);
  }
  mpi::sleepy_barrier(MPI_COMM_WORLD);
  if (world_rank() == 3) {
    Buffers in(*second, 1, kBytes);
    EXPECT_EQ(second->pull("solo", Version::latest(), in.tensors).bytes, kBytes);
    EXPECT_EQ(in.mismatches(5), 0u);
  }
  mpi::sleepy_barrier(MPI_COMM_WORLD);
  if (world_rank() == 1) first->unpublish("solo", 1);
  second->close();
  first->close();
  ::unsetenv("TENSORHUB_TOKEN");
}

TEST(HubLifecycle, BadPoolBytesVariableIsNamed) {
  ::setenv("TENSORHUB_POOL_BYTES", "lots", 1);
  HubOptions o;  // pool_bytes 0: read from the environment
  std::string what;
  try {
    Hub::join(MPI_COMM_WORLD, o);
  } catch (const UserError& e) {
    what = e.what();
  }
  ::unsetenv("TENSORHUB_POOL_BYTES");
  EXPECT_NE(what.find("TENSORHUB_POOL_BYTES"), std::string::npos) << "'" << what << "'";
  EXPECT_NE(what.find("lots"), std::string::npos) << what;
}

}  // namespace
}  // namespace tensorhub
