// The parts of `write` the serial and the parallel variant share: input validation, the file's
// metadata (root attributes, /types, /tensors datasets and their attributes) and writing one
// tensor's bytes piece by piece, checking each chunk against the manifest first.
#pragma once

#include <hdf5.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "h5_handles.hpp"
#include "header.hpp"
#include "layout.hpp"
#include "tensorhub/snapshot/snapshot.hpp"

namespace tensorhub::snapshot::writer {

// Throws SnapshotError unless the manifest is one `inspect` will accept back (its JSON
// round-trips to an equal manifest, sizes are sane, the model name has no NUL byte).
void validate_manifest(const Manifest& manifest, const std::string& path);

// For each manifest tensor, the index into `tensors` of the caller's tensor for it, or -1.
// Throws SnapshotError for a tensor not in the manifest, a duplicate, a dtype / shape that
// differs from the manifest, a short buffer, a null pointer or non-host memory.
std::vector<int> match_tensors(const Manifest& manifest, std::span<const Tensor> tensors, const std::string& path);

// Refuses an existing `path` unless `overwrite` (SnapshotError).
void check_overwrite(const std::string& path, bool overwrite);

// "2025-01-31T12:34:56Z"
std::string now_utc_iso8601();
// "tensorhub 0.1.0"
std::string creator();

// File access properties every snapshot file is created with: format bounds (HDF5 1.8 object
// headers, so attributes larger than 64 KiB go to dense storage) and file locking that is
// skipped where the file system does not support it (NFS).
void set_file_access(hid_t fapl, const std::string& path);

// Writes the root attributes, the bf16 type (if used), /tensors and one dataset per manifest
// tensor with its attributes. Collective in parallel HDF5: every rank calls it identically.
// Returns the datasets in manifest order, open.
std::vector<h5::Dataset> create_contents(hid_t file, const Manifest& manifest, const format::RawHeader& header,
                                         const std::string& path);

// Reports (done, total) after each chunk.
class ProgressMeter {
 public:
  ProgressMeter(const Progress& fn, std::uint64_t total) : fn_(fn), total_(total) {}
  void add(std::uint64_t bytes) {
    done_ += bytes;
    if (fn_) fn_(done_, total_);
  }

 private:
  const Progress& fn_;
  std::uint64_t total_;
  std::uint64_t done_ = 0;
};

// Checks every chunk of piece `piece` of `tensor`'s source bytes against the manifest, throws
// ChecksumError on a mismatch (nothing of that piece written).
void check_source_chunks(const Manifest& manifest, std::uint32_t index, const layout::Piece& piece,
                         const unsigned char* base, const std::string& path);

// Writes all of `tensor` (manifest entry `index`) into `dataset`, piece by piece.
void write_tensor(hid_t dataset, hid_t dxpl, const Manifest& manifest, std::uint32_t index, const Tensor& tensor,
                  std::uint64_t piece_bytes, ProgressMeter& progress, const std::string& path);

}  // namespace tensorhub::snapshot::writer
