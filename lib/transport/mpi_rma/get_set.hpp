// The mpi_rma reads of the get_flush mode (MpiReadMode::kGetFlush): each read is an MPI_Get,
// and complete() finishes all of them with one MPI_Win_flush per target that has reads
// pending. No request objects, no Testsome over them, and, unlike an osc ucx MPI_Rget, no
// atomic on the target's window state, which waits for the target to call into MPI. Not
// thread-safe: the transport's mutex guards it.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "tensorhub/mpi/window.hpp"
#include "tensorhub/transport/transport.hpp"

namespace tensorhub::transport {

class GetSet {
 public:
  // Starts the read (MPI_Get); throws MpiError (a TransportError) with its context when MPI
  // refuses it, and then nothing is recorded.
  void start(mpi::Window& window, void* dst, std::uint64_t bytes, int target, MPI_Aint disp, std::uint64_t tag,
             MPI_Datatype origin = MPI_DATATYPE_NULL);
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  // Flushes every target with reads pending, appending one Completion per read: ok, or failed
  // with MPI's error for that target. Blocks while the bytes already posted move (the flush),
  // never to wait for a new read or for the target's own MPI calls on a MPI_Win_allocate
  // window over shared memory (measured: share/doc/benchmarks.md, "mpi_rma read modes").
  void complete(mpi::Window& window, std::vector<Completion>& out);

  // The destructor's path: flushes, errors ignored.
  void abandon(mpi::Window& window) noexcept;

 private:
  std::map<int, std::vector<std::uint64_t>> tags_;  // target rank -> tags of its pending reads
  std::size_t size_ = 0;
};

}  // namespace tensorhub::transport
