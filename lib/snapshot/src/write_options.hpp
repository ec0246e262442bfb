// Knobs of the parallel writer that are not part of the public API: the transfer mode and the
// I/O piece size, for benchmarks (tests/snapshot/bench_snapshot.cpp) and tests.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <span>
#include <string>

#include "layout.hpp"
#include "tensorhub/snapshot/snapshot.hpp"

namespace tensorhub::snapshot::detail {

// kIndependent: each owner writes its tensors alone (H5FD_MPIO_INDEPENDENT); the default, and
// the faster one here: HDF5 1.10 has no multi-dataset write, so a collective write of one
// dataset makes every rank wait for its owner, serialising the ranks (measured: share/doc/snapshot-format.md).
// kCollective: every rank joins every piece's H5Dwrite (H5FD_MPIO_COLLECTIVE), non-owners with an empty selection.
enum class Transfer { kIndependent, kCollective };

struct WriteOptions {
  Transfer transfer = Transfer::kIndependent;
  std::uint64_t piece_bytes = layout::kPieceBytes;
};

void write_parallel(MPI_Comm comm, const std::string& path, const Manifest& manifest,
                    std::span<const Tensor> local_tensors, bool overwrite, const Progress& progress,
                    const WriteOptions& options);

// The serial writer with a piece size (tests use small pieces to cover multi-piece tensors).
void write_serial(const std::string& path, const Manifest& manifest, std::span<const Tensor> tensors, bool overwrite,
                  const Progress& progress, std::uint64_t piece_bytes);

}  // namespace tensorhub::snapshot::detail
