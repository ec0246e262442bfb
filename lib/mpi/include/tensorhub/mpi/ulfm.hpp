// MPI fault-tolerance extensions (ULFM), behind one small interface. With an MPI that has them
// (Open MPI 5 started with `mpirun --with-ft ulfm`), a dead rank is reported instead of hanging
// the survivors, who then revoke the communicator, shrink it to the live ranks and go on. Without
// them every call here but support() and failed_ranks() throws UlfmUnavailable, and callers use
// their deadline-based path (README "Failure model").
//
// Measured on Open MPI 5.0.7 (ARCHITECTURE.md §5): MPI_Recv/Barrier on a dead peer fail with
// MPIX_ERR_PROC_FAILED in 5-50 ms; revoke < 0.1 ms; shrink 1-8 ms. One-sided operations are not
// failure-aware: poll MPI_Test + failed_ranks(), never block on a request to a maybe-dead rank.
#pragma once

#include <mpi.h>

#include <string>
#include <vector>

#include "tensorhub/mpi/mpi.hpp"

namespace tensorhub::mpi {

struct UlfmSupport {
  bool compiled = false;  // built against an MPI with mpi-ext.h's MPIX_Comm_* calls
  bool enabled = false;   // and this job runs with fault tolerance on (the MPIX_FT attribute)
  std::string detail;     // one line for logs and `tensorhub probe`: what is there, or what is missing
};

// Cheap and local; needs MPI initialised.
UlfmSupport ulfm_support();

class UlfmUnavailable : public MpiError {
 public:
  explicit UlfmUnavailable(const std::string& what);
};

// Is rc (an MPI return code) a process failure or a revoked communicator?
bool is_process_failure(int rc);

// Ranks of `comm` known to have failed (MPIX_Comm_get_failed; local, no communication).
// Always empty without ULFM.
std::vector<int> failed_ranks(MPI_Comm comm);
// Has some rank revoked `comm`? False without ULFM.
bool is_revoked(MPI_Comm comm);

// Makes every pending and later operation on `comm` fail with MPIX_ERR_REVOKED, on all ranks:
// how one rank tells the others to stop and repair.
void revoke(MPI_Comm comm);
// Collective over the live ranks of `comm` (revoked or not): a new communicator of them, ranks
// in the same order, with MPI_ERRORS_RETURN.
Comm shrink(MPI_Comm comm);
// Collective over the live ranks: the logical AND of `value`. Acknowledges the failures seen so
// far first, so that it succeeds on a communicator that has lost ranks; throws MpiError only
// when it cannot complete.
bool agree(MPI_Comm comm, bool value);
// Barrier over the live ranks of `comm` (agree on true).
void survivors_barrier(MPI_Comm comm);

// The ranks in `to` of the ranks `ranks` of `from` (MPI_UNDEFINED where a rank is not in `to`).
std::vector<int> translate_ranks(MPI_Comm from, const std::vector<int>& ranks, MPI_Comm to);

}  // namespace tensorhub::mpi
