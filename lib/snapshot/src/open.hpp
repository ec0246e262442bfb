// Opening a snapshot for reading (default sec2 driver, no MPI): the file, its header, and each
// tensor's dataset checked against the manifest before any byte is read.
#pragma once

#include <cstdint>
#include <string>

#include "h5_handles.hpp"
#include "header.hpp"

namespace tensorhub::snapshot::reader {

using Object = h5::Handle<H5Oclose>;

struct OpenSnapshot {
  std::string path;
  h5::File file;
  h5::Group tensors;  // /tensors
  format::Header header;
  std::uint64_t file_bytes = 0;
};

// Throws SnapshotError for a missing, unreadable, non-HDF5 or truncated file, a missing or
// invalid header (see format::parse_header) or a missing /tensors group.
OpenSnapshot open_snapshot(const std::string& path);

// Opens manifest tensor `index`'s dataset and checks it: it exists and is a dataset, has the
// manifest's shape and HDF5 type, and its attributes (name, dtype, shard, chunk checksums)
// agree with the manifest. Throws SnapshotError naming the file and the dataset.
Object open_tensor(const OpenSnapshot& snap, std::uint32_t index);

}  // namespace tensorhub::snapshot::reader
