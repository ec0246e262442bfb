// Typed attribute I/O on any HDF5 object (file root, group, dataset, committed datatype).
// Writers create scalar attributes (strings: fixed-size UTF-8, NUL-padded) or 1-D arrays; readers
// return nullopt when the attribute is absent and throw SnapshotError naming the file, object
// and attribute when it has the wrong class or shape.
#pragma once

#include <hdf5.h>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tensorhub::snapshot::h5 {

// Names an attribute in errors: file, object path (e.g. "/" or "/tensors/w"), attribute.
struct AttrRef {
  hid_t object;
  std::string_view file;
  std::string_view object_path;
  const char* name;
};

void write_u32(const AttrRef& a, std::uint32_t value);
void write_u64(const AttrRef& a, std::uint64_t value);
void write_string(const AttrRef& a, std::string_view value);
void write_u64_array(const AttrRef& a, std::span<const std::uint64_t> values);

// Any non-negative integer attribute with one element, as u64.
std::optional<std::uint64_t> read_u64(const AttrRef& a);
// A string attribute with one element: fixed-length, or variable-length when `allow_variable`
// (format 1), else SnapshotError.
std::optional<std::string> read_string(const AttrRef& a, bool allow_variable);
// A 1-D (or scalar) integer attribute of at most `max_elems` elements, as u64.
std::optional<std::vector<std::uint64_t>> read_u64_array(const AttrRef& a, std::uint64_t max_elems);

}  // namespace tensorhub::snapshot::h5
