// The one main() of every MPI test binary: initialises MPI, silences gtest's printer on all
// ranks but 0 (each rank still prints its own failures), and fails every rank if any failed.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdio>

#include "tensorhub/mpi/mpi.hpp"

namespace {

// Prints failed assertions of non-zero ranks with their rank, so a failure is never silent.
class RankFailurePrinter : public ::testing::EmptyTestEventListener {
 public:
  explicit RankFailurePrinter(int rank) : rank_(rank) {}
  void OnTestPartResult(const ::testing::TestPartResult& r) override {
    if (r.failed()) {
      std::fprintf(stderr, "[rank %d] %s:%d: Failure\n%s\n", rank_, r.file_name() ? r.file_name() : "?",
                   r.line_number(), r.summary());
    }
  }

 private:
  int rank_;
};

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  tensorhub::mpi::Environment env(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new RankFailurePrinter(rank));
  }
  int rc = RUN_ALL_TESTS();
  int worst = 0;
  MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (rank == 0 && worst != 0 && rc == 0) std::fprintf(stderr, "a test failed on another rank\n");
  return worst;
}
