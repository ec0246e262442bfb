#include "h5_attr.hpp"

#include <algorithm>

#include "h5_handles.hpp"

namespace tensorhub::snapshot::h5 {
namespace {

std::string where(const AttrRef& a) {
  return std::string("attribute '") + a.name + "' of " + std::string(a.object_path);
}

[[noreturn]] void bad(const AttrRef& a, const std::string& problem) { fail(a.file, where(a) + ": " + problem); }

Datatype vl_string_type(std::string_view file) {
  Datatype t(H5Tcopy(H5T_C_S1), file, "H5Tcopy(H5T_C_S1)");
  check(H5Tset_size(t.get(), H5T_VARIABLE), file, "defining a string type");
  check(H5Tset_cset(t.get(), H5T_CSET_UTF8), file, "defining a string type");
  return t;
}

void write_raw(const AttrRef& a, hid_t file_type, hid_t mem_type, hid_t space, const void* data) {
  Attribute attr(H5Acreate2(a.object, a.name, file_type, space, H5P_DEFAULT, H5P_DEFAULT), a.file,
                 "creating " + where(a));
  check(H5Awrite(attr.get(), mem_type, data), a.file, "writing " + where(a));
  attr.close(a.file, "closing " + where(a));
}

void write_scalar(const AttrRef& a, hid_t file_type, hid_t mem_type, const void* data) {
  Dataspace space(H5Screate(H5S_SCALAR), a.file, "H5Screate");
  write_raw(a, file_type, mem_type, space.get(), data);
}

// Opens an existing attribute; nullopt if absent.
std::optional<Attribute> open(const AttrRef& a) {
  if (!check_tri(H5Aexists(a.object, a.name), a.file, "looking up " + where(a))) return std::nullopt;
  return Attribute(H5Aopen(a.object, a.name, H5P_DEFAULT), a.file, "opening " + where(a));
}

std::uint64_t element_count(const AttrRef& a, const Attribute& attr) {
  Dataspace space(H5Aget_space(attr.get()), a.file, "reading the dataspace of " + where(a));
  const int rank = H5Sget_simple_extent_ndims(space.get());
  if (rank < 0) fail(a.file, "reading the dataspace of " + where(a));
  if (rank > 1) bad(a, "has " + std::to_string(rank) + " dimensions, expected at most 1");
  const hssize_t n = H5Sget_simple_extent_npoints(space.get());
  if (n < 0) fail(a.file, "reading the dataspace of " + where(a));
  return static_cast<std::uint64_t>(n);
}

// Reads an integer attribute of `n` elements as u64, refusing negative values.
std::vector<std::uint64_t> read_integers(const AttrRef& a, const Attribute& attr, std::uint64_t n) {
  Datatype type(H5Aget_type(attr.get()), a.file, "reading the type of " + where(a));
  if (H5Tget_class(type.get()) != H5T_INTEGER) bad(a, "is not an integer");
  if (H5Tget_size(type.get()) > 8) bad(a, "is an integer wider than 64 bits");
  std::vector<std::uint64_t> out(n);
  if (H5Tget_sign(type.get()) == H5T_SGN_NONE) {
    check(H5Aread(attr.get(), H5T_NATIVE_UINT64, out.data()), a.file, "reading " + where(a));
    return out;
  }
  std::vector<std::int64_t> signed_values(n);
  check(H5Aread(attr.get(), H5T_NATIVE_INT64, signed_values.data()), a.file, "reading " + where(a));
  for (std::uint64_t i = 0; i < n; ++i) {
    if (signed_values[i] < 0) bad(a, "has a negative value");
    out[i] = static_cast<std::uint64_t>(signed_values[i]);
  }
  return out;
}

}  // namespace

void write_u32(const AttrRef& a, std::uint32_t value) { write_scalar(a, H5T_STD_U32LE, H5T_NATIVE_UINT32, &value); }

void write_u64(const AttrRef& a, std::uint64_t value) { write_scalar(a, H5T_STD_U64LE, H5T_NATIVE_UINT64, &value); }

void write_string(const AttrRef& a, std::string_view value) {
  // Fixed size (format 2): no variable-length heap objects for a reader to chase.
  Datatype type(H5Tcopy(H5T_C_S1), a.file, "H5Tcopy(H5T_C_S1)");
  check(H5Tset_size(type.get(), std::max<std::size_t>(value.size(), 1)), a.file, "defining a string type");
  check(H5Tset_strpad(type.get(), H5T_STR_NULLPAD), a.file, "defining a string type");
  check(H5Tset_cset(type.get(), H5T_CSET_UTF8), a.file, "defining a string type");
  std::string copy(value);
  copy.resize(std::max<std::size_t>(value.size(), 1), '\0');
  write_scalar(a, type.get(), type.get(), copy.data());
}

void write_u64_array(const AttrRef& a, std::span<const std::uint64_t> values) {
  const hsize_t dims[1] = {values.size()};
  Dataspace space(H5Screate_simple(1, dims, nullptr), a.file, "H5Screate_simple");
  write_raw(a, H5T_STD_U64LE, H5T_NATIVE_UINT64, space.get(), values.data());
}

std::optional<std::uint64_t> read_u64(const AttrRef& a) {
  auto attr = open(a);
  if (!attr) return std::nullopt;
  if (element_count(a, *attr) != 1) bad(a, "is not a single value");
  return read_integers(a, *attr, 1).front();
}

std::optional<std::string> read_string(const AttrRef& a, bool allow_variable) {
  auto attr = open(a);
  if (!attr) return std::nullopt;
  if (element_count(a, *attr) != 1) bad(a, "is not a single string");
  Datatype type(H5Aget_type(attr->get()), a.file, "reading the type of " + where(a));
  if (H5Tget_class(type.get()) != H5T_STRING) bad(a, "is not a string");
  const htri_t variable = H5Tis_variable_str(type.get());
  if (variable < 0) fail(a.file, "reading the type of " + where(a));
  if (variable > 0 && !allow_variable) bad(a, "is a variable-length string (this format stores fixed-size strings)");
  if (variable > 0) {
    const Datatype mem = vl_string_type(a.file);
    char* ptr = nullptr;
    check(H5Aread(attr->get(), mem.get(), &ptr), a.file, "reading " + where(a));
    std::string out = ptr ? std::string(ptr) : std::string();
    if (ptr) H5free_memory(ptr);
    return out;
  }
  const std::size_t size = H5Tget_size(type.get());
  if (size == 0 || size > (1u << 30)) bad(a, "has an unreasonable string size");
  Datatype mem(H5Tcopy(H5T_C_S1), a.file, "H5Tcopy(H5T_C_S1)");
  check(H5Tset_size(mem.get(), size), a.file, "defining a string type");
  check(H5Tset_strpad(mem.get(), H5T_STR_NULLPAD), a.file, "defining a string type");
  const H5T_cset_t cset = H5Tget_cset(type.get());  // HDF5 converts no character sets
  if (cset < 0) bad(a, "has an unknown character set");
  check(H5Tset_cset(mem.get(), cset), a.file, "defining a string type");
  std::string buf(size, '\0');
  check(H5Aread(attr->get(), mem.get(), buf.data()), a.file, "reading " + where(a));
  return buf.substr(0, buf.find('\0'));
}

std::optional<std::vector<std::uint64_t>> read_u64_array(const AttrRef& a, std::uint64_t max_elems) {
  auto attr = open(a);
  if (!attr) return std::nullopt;
  const std::uint64_t n = element_count(a, *attr);
  if (n > max_elems) bad(a, "has " + std::to_string(n) + " elements, expected at most " + std::to_string(max_elems));
  return read_integers(a, *attr, n);
}

}  // namespace tensorhub::snapshot::h5
