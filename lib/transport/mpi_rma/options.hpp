// Settings of the mpi_rma transport, from one typed reader of the environment
// (tensorhub/core/env.hpp: a bad value is a UserError naming the variable, never read as 0).
#pragma once

#include <chrono>
#include <cstddef>

namespace tensorhub::transport {

// How a read is issued and completed (mpi_rma_transport.hpp explains the choice):
//  * kGetFlush: MPI_Get, completed by MPI_Win_flush of its target when the transport is polled;
//  * kRget: MPI_Rget, completed by MPI_Testsome (the ULFM mode always reads this way).
enum class MpiReadMode { kGetFlush, kRget };

// "get_flush" / "rget".
const char* to_string(MpiReadMode mode);

struct MpiRmaOptions {
  // Dynamic windows: at most this many separate attachments (osc ucx allows 32).
  // TENSORHUB_MPI_MAX_ATTACH, 1..65536.
  std::size_t max_attach = 30;
  // Period of the progress thread's MPI_Iprobe; 0 = no thread. Open MPI's osc ucx completes an
  // Rget only while the target calls into MPI (seen even on one host), so a holder that
  // computes or waits on the coordinator must still progress. TENSORHUB_MPI_PROGRESS_US,
  // 0..1000000.
  std::chrono::microseconds progress_period{1000};
  // Use the ULFM mode when the MPI supports it (mpi_rma_transport.hpp). TENSORHUB_MPI_FT, a flag.
  bool fault_tolerance = true;
  // TENSORHUB_MPI_READ, get_flush or rget. Ignored by the ULFM mode (always rget).
  MpiReadMode read_mode = MpiReadMode::kGetFlush;

  // The defaults with the environment applied. Throws UserError.
  static MpiRmaOptions from_env();
};

}  // namespace tensorhub::transport
