// HDF5 snapshots: one file per version, one dataset per tensor (real shape, recognisable
// dtype), the version's manifest and per-chunk checksums (XXH3-64, or XXH64 in older files) as
// attributes. Format:
// share/doc/snapshot-format.md.
//
// Every function throws SnapshotError (a UserError) naming the file and the HDF5 object for bad
// input (missing or truncated file, wrong format version, missing dataset, shape or dtype not
// matching the manifest) and ChecksumError for bytes that do not match their checksum. None of
// them crashes on a malformed file.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "tensorhub/core/error.hpp"
#include "tensorhub/core/manifest.hpp"
#include "tensorhub/core/tensor.hpp"

namespace tensorhub::snapshot {

// The format `write` produces (3: format 2 plus the manifest's checksum algorithm, XXH3-64 sums
// in new files, in a dataset attribute named after the algorithm). Readers also read format 2
// (HDF5 1.10 file format, whose metadata HDF5 checksums itself; fixed-size string attributes;
// XXH64 sums) and format 1 (variable-length strings; XXH64 sums).
constexpr std::uint32_t kFormatVersion = 3;
constexpr std::uint32_t kOldestFormatVersion = 1;
constexpr std::uint32_t kFirstXxh3FormatVersion = 3;

class SnapshotError : public UserError {
 public:
  using UserError::UserError;
};

// Called after each chunk is written or read: (bytes done, bytes total). May be empty.
// In write(comm, ...) each rank reports the bytes of its own tensors.
using Progress = std::function<void(std::uint64_t done, std::uint64_t total)>;

// What `inspect` reports: the file's header, validated against its datasets.
struct SnapshotInfo {
  std::string path;
  std::uint32_t format_version = 0;
  Manifest manifest;       // model, version, chunk size, tensors, per-chunk checksums
  std::string created_by;  // e.g. "tensorhub 0.1.0"
  std::string created_at;  // ISO 8601 UTC
  std::uint64_t file_bytes = 0;
};

// Collective over `comm` (parallel HDF5, MPI-IO). Every rank passes the same manifest and the
// tensors of that manifest it holds (host memory, matched by name; each manifest tensor must be
// passed by exactly one rank). The file is written to `path + ".tmp"` and renamed on success,
// so a reader never sees a half-written snapshot. Overwrites an existing file only if
// `overwrite`.
void write(MPI_Comm comm, const std::string& path, const Manifest& manifest, std::span<const Tensor> local_tensors,
           bool overwrite = false, const Progress& progress = {});

// One process holds every tensor (no MPI needed; serial HDF5 driver).
void write(const std::string& path, const Manifest& manifest, std::span<const Tensor> tensors, bool overwrite = false,
           const Progress& progress = {});

// Opens, reads the header and checks every dataset exists with the manifest's shape and dtype.
SnapshotInfo inspect(const std::string& path);

// Fills `into` (a subset of the snapshot's tensors, matched by name; dtype and shape must
// match, buffers in host memory). With `verify`, checks every chunk read against its checksum.
void read(const std::string& path, std::span<const Tensor> into, bool verify = true, const Progress& progress = {});

// Reads chunks `chunks` (indices within tensor `tensor` of the snapshot, each at most once) and
// hands each to on_chunk(chunk index within the tensor, its bytes; valid during the call only),
// after checking it against its checksum when `verify` (ChecksumError otherwise): the pieces a
// box read wants of a published tensor (resharding). Returns the bytes read.
std::uint64_t read_chunks(const std::string& path, const std::string& tensor, std::span<const std::uint32_t> chunks,
                          bool verify, const std::function<void(std::uint32_t, const unsigned char*)>& on_chunk);

struct VerifyReport {
  std::uint64_t chunks = 0;
  std::uint64_t bytes = 0;
  // "tensor 'layers.3.w' chunk 2 (bytes 8388608..12582912): xxh64 0x... != manifest 0x..."
  std::vector<std::string> mismatches;
  bool ok() const { return mismatches.empty(); }
};

// Reads every dataset and checks every chunk's checksum; reports all mismatches (does not stop
// at the first). Structural problems still throw SnapshotError.
VerifyReport verify(const std::string& path, const Progress& progress = {});

}  // namespace tensorhub::snapshot
