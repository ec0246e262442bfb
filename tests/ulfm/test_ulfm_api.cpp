// lib/mpi/ulfm.hpp on 2 ranks: without ULFM (Debian 12's Open MPI) every call says "not
// available" and the queries say "no failure"; with ULFM on (the chroot lane, mpirun --with-ft
// ulfm) agree/shrink/revoke really work on a communicator without failures.
#include <gtest/gtest.h>
#include <mpi.h>

#include <chrono>
#include <string>
#include <thread>

#include "tensorhub/mpi/mpi.hpp"
#include "tensorhub/mpi/ulfm.hpp"

namespace tensorhub::mpi {
namespace {

TEST(Ulfm, SupportIsReportedWithAReason) {
  const auto s = ulfm_support();
  EXPECT_FALSE(s.detail.empty());
  if (!s.compiled) {
    EXPECT_FALSE(s.enabled);
  }
  EXPECT_TRUE(failed_ranks(MPI_COMM_WORLD).empty());
  EXPECT_FALSE(is_revoked(MPI_COMM_WORLD));
  EXPECT_FALSE(is_process_failure(MPI_SUCCESS));
  EXPECT_FALSE(is_process_failure(MPI_ERR_OTHER));
}

TEST(Ulfm, WithoutUlfmEveryRepairCallSaysNotAvailable) {
  if (ulfm_support().enabled) GTEST_SKIP() << "ULFM is on in this job";
  auto c = Comm::duplicate(MPI_COMM_WORLD);
  try {
    revoke(c.get());
    FAIL() << "revoke did not throw";
  } catch (const UlfmUnavailable& e) {
    EXPECT_NE(std::string(e.what()).find("not available"), std::string::npos) << e.what();
  }
  EXPECT_THROW(shrink(c.get()), UlfmUnavailable);
  EXPECT_THROW(agree(c.get(), true), UlfmUnavailable);
  EXPECT_FALSE(is_revoked(c.get()));
}

TEST(Ulfm, WithUlfmAgreeShrinkAndRevokeWork) {
  if (!ulfm_support().enabled) GTEST_SKIP() << ulfm_support().detail;
  auto c = Comm::duplicate(MPI_COMM_WORLD);
  EXPECT_TRUE(agree(c.get(), true));
  EXPECT_FALSE(agree(c.get(), c.rank() != 0));  // logical AND: rank 0 says no
  auto s = shrink(c.get());
  EXPECT_EQ(s.size(), c.size());
  EXPECT_EQ(s.rank(), c.rank());
  const auto back = translate_ranks(s.get(), {0, 1}, c.get());
  EXPECT_EQ(back, (std::vector<int>{0, 1}));
  if (c.rank() == 0) revoke(c.get());
  // The revoke reaches the other rank asynchronously.
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!is_revoked(c.get()) && std::chrono::steady_clock::now() < end) {
    int flag = 0;
    MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, s.get(), &flag, MPI_STATUS_IGNORE);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_TRUE(is_revoked(c.get()));
  int x = 1;
  EXPECT_TRUE(is_process_failure(MPI_Bcast(&x, 1, MPI_INT, 0, c.get())));  // revoked: fails at once
  survivors_barrier(s.get());
}

}  // namespace
}  // namespace tensorhub::mpi
