// bench p2p's raw MPI baselines: one reader (rank 1) reads S bytes of the holder (rank 0) in
// chunks, `inflight` at a time, with no hub in between:
//   raw_get_flush            MPI_Get + MPI_Win_flush per batch, MPI_Win_allocate window (the
//                            window and read of the hub's mpi_rma pool, TENSORHUB_MPI_READ=get_flush)
//   raw_rget                 MPI_Rget + MPI_Waitall per batch, MPI_Win_allocate window (rget mode)
//   raw_get_flush_win_create the same two on an MPI_Win_create window over the holder's own
//   raw_rget_win_create      memory (per-publish windows; the old "raw" baseline)
//   raw_rget_dynamic         MPI_Rget on MPI_Win_create_dynamic + attach (--dynamic; crashes at
//                            random with Open MPI 4.1.4 osc ucx)
#pragma once

#include <mpi.h>

#include <cstdint>
#include <functional>
#include <string>

#include "tensorhub/mpi/window.hpp"

namespace tensorhub::cli::bench {

enum class RawRead { kGetFlush, kRget };

// Reads [base, base + bytes) of rank 0 into dst.
void raw_read(mpi::Window& w, RawRead mode, unsigned char* dst, std::uint64_t bytes, std::uint64_t chunk, MPI_Aint base,
              std::uint32_t inflight);

// Runs every raw baseline (the dynamic one when `dynamic`) over the holder's `src`: for each,
// creates its window (collective), calls `timed(name, read)` on every rank (the caller times
// `read` on the reader), frees it. setup(name, seconds) gets the holder's window creation cost.
struct RawRun {
  bool reader = false;
  unsigned char* src = nullptr;  // holder: the bytes to expose
  unsigned char* dst = nullptr;  // reader
  std::uint64_t bytes = 0;
  std::uint64_t chunk = 0;
  std::uint32_t inflight = 0;
  bool dynamic = false;
  std::function<void(const std::string&, const std::function<void()>&)> timed;
  std::function<void(const std::string&, double)> setup;
};
void run_raw_baselines(const RawRun& r);

}  // namespace tensorhub::cli::bench
