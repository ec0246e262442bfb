// Resharding over MPI (6 ranks: 0..3 a trainer group, 4 and 5 rollout readers; rank 0 hosts the
// coordinator). The trainer holds two bf16 global tensors of odd sizes in its registered pool: a
// matrix cut along dim 0 (version 1) or along dim 1 (version 2), and a fused-experts tensor cut
// along its experts dimension, unevenly. Readers pull their tensor-parallel box at TP = 1, 2 and
// 3 (uneven), cut along either dimension, through the real data paths (mpi_rma by default), and
// check every element against the global tensor. No trainer rank stages or gathers anything: its
// memory is only read.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

#include "tensorhub/core/box.hpp"
#include "tensorhub/hub.hpp"
#include "tensorhub/mpi/mpi.hpp"

namespace tensorhub {
namespace {

const std::vector<std::int64_t> kMatrix{1031, 77};    // 158,774 bytes
const std::vector<std::int64_t> kExperts{6, 37, 29};  // 12,876 bytes

int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

// A bf16 bit pattern unique to each element of each global tensor.
std::uint16_t element(std::uint64_t tensor, std::uint64_t flat) {
  return static_cast<std::uint16_t>(flat * 7 + tensor * 31 + 3);
}

std::uint64_t flat_of(const std::vector<std::int64_t>& shape, const std::vector<std::int64_t>& at) {
  std::uint64_t f = 0;
  for (std::size_t d = 0; d < shape.size(); ++d) f = f * static_cast<std::uint64_t>(shape[d]) + at[d];
  return f;
}

// The elements of box `b` of global tensor `tensor` (shape `shape`), row-major, into `out`.
void fill_box(std::uint64_t tensor, const std::vector<std::int64_t>& shape, const Box& b, std::uint16_t* out) {
  std::vector<std::int64_t> at(b.offset);
  const auto n = volume(b);
  for (std::uint64_t i = 0; i < n; ++i) {
    out[i] = element(tensor, flat_of(shape, at));
    for (std::size_t d = at.size(); d-- > 0;) {
      if (++at[d] < b.offset[d] + b.extent[d]) break;
      at[d] = b.offset[d];
    }
  }
}

HubOptions pooled() {
  HubOptions o;
  o.pool_bytes = 8ull << 20;
  o.chunk_bytes = 16384;  // several chunks per shard, and chunk edges inside rows
  o.pull_deadline = std::chrono::milliseconds(10000);
  o.verify_threads = 0;
  return o;
}

TEST(ReshardMpi, ReadersAtEveryTpSizeGetTheirBoxFromTheTrainersShards) {
  auto hub = Hub::join(MPI_COMM_WORLD, pooled());
  const int rank = world_rank();
  for (const std::size_t cut : {0u, 1u}) {
    const std::uint64_t version = cut + 1;
    std::vector<void*> held;
    if (rank < 4) {
      const Box mb = split(kMatrix, cut, 4, rank);
      const Box eb = split(kExperts, 0, 4, rank);  // 2, 2, 1, 1 experts
      auto* m = static_cast<std::uint16_t*>(hub->allocate(volume(mb) * 2));
      auto* e = static_cast<std::uint16_t*>(hub->allocate(volume(eb) * 2));
      held = {m, e};
      fill_box(0, kMatrix, mb, m);
      fill_box(1, kExperts, eb, e);
      const std::vector<Tensor> shard{
          host_slice("w.tp" + std::to_string(rank), DType::kBF16, mb.extent, m, "w", kMatrix, mb.offset),
          host_slice("experts.ep" + std::to_string(rank), DType::kBF16, eb.extent, e, "experts", kExperts, eb.offset)};
      hub->publish("m", version, shard, Group{"trainer", 4, static_cast<std::uint32_t>(rank)});
    }
    mpi::sleepy_barrier(MPI_COMM_WORLD);
    if (rank >= 4) {
      const int reader = rank - 4;
      for (const std::size_t dim : {0u, 1u}) {
        for (const std::int64_t tp : {1, 2, 3}) {
          for (std::int64_t k = reader; k < tp; k += 2) {
            const Box mb = split(kMatrix, dim, tp, k);
            const Box eb = split(kExperts, dim == 0 ? 2 : 1, tp, k);  // the other fused dims
            std::vector<std::uint16_t> m(volume(mb)), e(volume(eb)), want_m(volume(mb)), want_e(volume(eb));
            fill_box(0, kMatrix, mb, want_m.data());
            fill_box(1, kExperts, eb, want_e.data());
            const std::vector<Tensor> into{
                host_slice("w", DType::kBF16, mb.extent, m.data(), "w", kMatrix, mb.offset),
                host_slice("experts", DType::kBF16, eb.extent, e.data(), "experts", kExperts, eb.offset)};
            PullOptions o;
            o.relay = false;  // every box from the trainer's shards (and m, e are freed after the check)
            const auto r = hub->pull("m", Version::exact(version), into, o);
            const std::string what = "trainer cut along " + std::to_string(cut) + ", reader " + std::to_string(k) +
                                     " of TP=" + std::to_string(tp) + " along " + std::to_string(dim);
            EXPECT_EQ(m, want_m) << what;
            EXPECT_EQ(e, want_e) << what;
            EXPECT_EQ(r.relay_bytes, 0u) << what;
            EXPECT_GE(r.bytes, (m.size() + e.size()) * 2) << what;
          }
        }
      }
    }
    mpi::sleepy_barrier(MPI_COMM_WORLD);
    if (rank < 4) {
      hub->unpublish("m", version);
      for (auto* p : held) hub->deallocate(p);
    }
  }
  hub->close();
}

}  // namespace
}  // namespace tensorhub
