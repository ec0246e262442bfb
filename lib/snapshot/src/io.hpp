// Raw element I/O on one tensor's dataset (hyperslab unions from layout.hpp) and the per-chunk
// checksum comparison shared by write, read and verify.
#pragma once

#include <hdf5.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "h5_handles.hpp"
#include "tensorhub/core/manifest.hpp"

namespace tensorhub::snapshot::io {

// One open tensor dataset and how to move its elements.
class TensorIo {
 public:
  // `shape` from the manifest (already checked against the dataset); `mem_type` the dtype's
  // HDF5 type (equal to the file type: no conversion); `dxpl` H5P_DEFAULT or an MPI-IO one.
  TensorIo(hid_t dataset, hid_t mem_type, hid_t dxpl, const std::vector<std::int64_t>& shape, std::string_view file,
           std::string object);

  // Elements [first, first + count), from / into `buf` (which points at element `first`).
  void write(std::uint64_t first, std::uint64_t count, const void* buf);
  void read(std::uint64_t first, std::uint64_t count, void* buf);
  // Takes part in a collective write with nothing selected (collective transfer mode).
  void write_nothing();

 private:
  void select(std::uint64_t first, std::uint64_t count, h5::Dataspace& mem);
  hid_t dataset_, mem_type_, dxpl_;
  std::vector<std::uint64_t> dims_;  // empty for a scalar
  std::string_view file_;
  std::string object_;
  h5::Dataspace file_space_;
};

// nullopt if the chunk's bytes match the manifest, else
// "tensor 'NAME' chunk C (bytes A..B): xxh3_64 0x... != manifest 0x..." (C counted in the tensor).
std::optional<std::string> check_chunk(const Manifest& manifest, std::uint32_t tensor, std::uint64_t chunk,
                                       const unsigned char* bytes);

}  // namespace tensorhub::snapshot::io
