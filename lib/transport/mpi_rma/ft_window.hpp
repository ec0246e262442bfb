// The window of the mpi_rma transport's ULFM mode (Open MPI 5 with `mpirun --with-ft ulfm`):
// the pool is this object's own memory exposed with MPI_Win_create, so that after a rank dies
// the survivors can revoke the job communicator, shrink it and create a new window over the same
// memory (ft_window.cpp describes the protocol). Endpoints keep naming ranks of the original
// communicator; rget() translates. Old windows and communicators are abandoned, never freed
// (MPI_Win_free over a dead rank may hang); MPI_Finalize releases them.
// Thread-safe: the progress thread repairs while the pulling thread reads.
#pragma once

#include <mpi.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "tensorhub/mpi/mpi.hpp"
#include "tensorhub/mpi/window.hpp"

namespace tensorhub::transport {

class FaultTolerantWindow {
 public:
  // Collective over `comm`: allocates `pool_bytes` (rounded up to pages), duplicates `comm`
  // (the original numbering and the live ranks) and creates the window, locked for all ranks.
  FaultTolerantWindow(MPI_Comm comm, std::uint64_t pool_bytes);

  void* memory() const { return memory_.get(); }

  // Starts an Rget from original rank `target`; nullopt when that rank is known dead. Throws
  // TransportError for a rank outside the job.
  std::optional<MPI_Request> rget(void* dst, std::size_t bytes, int target, MPI_Aint disp,
                                  MPI_Datatype origin = MPI_DATATYPE_NULL);

  // The original ranks known dead, after asking MPI (at most once per millisecond).
  std::vector<bool> dead_ranks();

  // Has a rank failed or the communicator been revoked since the last repair()?
  bool failure_pending();
  // Collective over the survivors: revoke, shrink, new window over the same memory.
  void repair();
  // Waits until every live rank reached this call, repairing on the way (an MPI_Ibarrier that a
  // failure abandons is started again on the repaired communicator).
  void barrier();

 private:
  struct FreeDeleter {
    void operator()(void* p) const { std::free(p); }
  };
  void mark_dead(int rank);  // caller holds mu_; logs the first time a rank is known dead

  std::unique_ptr<void, FreeDeleter> memory_;
  std::uint64_t bytes_ = 0;
  std::mutex mu_;             // guards everything below
  mpi::Comm origin_comm_;     // the job communicator as joined (endpoint numbering)
  mpi::Comm comm_;            // its live ranks now
  mpi::Window window_;        // over comm_
  std::vector<int> rank_of_;  // original rank -> rank in comm_, -1 if dead
  std::vector<bool> dead_;    // original ranks known dead
  std::vector<mpi::Window> retired_windows_;
  std::vector<mpi::Comm> retired_comms_;
  std::chrono::steady_clock::time_point next_check_{};
};

}  // namespace tensorhub::transport
