// mpi_rma: a region descriptor a reader received is checked against the holder's registered
// pool before MPI_Rget (issue 16, descriptor safety). Before, any displacement went to MPI.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <vector>

#include "mpi_rma/read_bounds.hpp"
#include "tensorhub/core/error.hpp"

namespace tensorhub::transport {
namespace {

const std::vector<std::uint64_t> kPools = {1 << 20, 4096, 0};  // rank 2: a dynamic window

TEST(MpiRmaBounds, AReadInsideTheHoldersPoolGivesItsDisplacement) {
  EXPECT_EQ(checked_displacement({8192, 4096}, 100, 200, 0, kPools, "mpi_rma:j:0"), 8292u);
  EXPECT_EQ(checked_displacement({0, 4096}, 0, 4096, 1, kPools, "mpi_rma:j:1"), 0u);
  EXPECT_EQ(checked_displacement({0, 1 << 20}, (1 << 20) - 1, 1, 0, kPools, "mpi_rma:j:0"), (1u << 20) - 1);
}

TEST(MpiRmaBounds, ARegionOutsideTheHoldersPoolIsATransportError) {
  // Inside rank 0's pool but not rank 1's (4096 bytes).
  EXPECT_THROW(checked_displacement({4096, 4096}, 0, 1, 1, kPools, "mpi_rma:j:1"), TransportError);
  EXPECT_THROW(checked_displacement({0, 4097}, 0, 1, 1, kPools, "mpi_rma:j:1"), TransportError);
  EXPECT_THROW(checked_displacement({1 << 21, 1}, 0, 1, 0, kPools, "mpi_rma:j:0"), TransportError);
  try {
    checked_displacement({4096, 8}, 0, 8, 1, kPools, "mpi_rma:j:1");
    FAIL() << "no error";
  } catch (const TransportError& e) {
    EXPECT_NE(std::string(e.what()).find("4096-byte pool rank 1 registered"), std::string::npos) << e.what();
  }
}

TEST(MpiRmaBounds, ARankOutsideTheJobIsATransportError) {
  EXPECT_THROW(checked_displacement({0, 1}, 0, 1, 3, kPools, "mpi_rma:j:3"), TransportError);
  EXPECT_THROW(checked_displacement({0, 1}, 0, 1, -1, kPools, "mpi_rma:j:-1"), TransportError);
  EXPECT_THROW(checked_displacement({0, 1}, 0, 1, 0, {}, "mpi_rma:j:0"), TransportError);
}

TEST(MpiRmaBounds, AReadPastTheRegionOrAWrappingRegionIsATransportError) {
  EXPECT_THROW(checked_displacement({0, 100}, 50, 51, 0, kPools, "mpi_rma:j:0"), TransportError);
  EXPECT_THROW(checked_displacement({0, 100}, 101, 0, 0, kPools, "mpi_rma:j:0"), TransportError);
  constexpr auto kMax = std::numeric_limits<std::uint64_t>::max();
  // A dynamic window: no pool bound, but the region must fit a signed MPI_Aint without wrapping.
  EXPECT_EQ(checked_displacement({1 << 30, 16}, 8, 8, 2, kPools, "mpi_rma:j:2"), (1u << 30) + 8);
  EXPECT_THROW(checked_displacement({kMax - 8, 16}, 0, 1, 2, kPools, "mpi_rma:j:2"), TransportError);
  EXPECT_THROW(checked_displacement({1ull << 63, 1}, 0, 1, 2, kPools, "mpi_rma:j:2"), TransportError);
  EXPECT_THROW(checked_displacement({kMax - 8, 16}, 0, 1, 0, kPools, "mpi_rma:j:0"), TransportError);
}

}  // namespace
}  // namespace tensorhub::transport
