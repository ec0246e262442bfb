#include "open.hpp"

#include <filesystem>
#include <system_error>
#include <vector>

#include "h5_attr.hpp"
#include "h5_types.hpp"

namespace tensorhub::snapshot::reader {
namespace {

[[noreturn]] void bad(const std::string& path, const std::string& what) {
  throw SnapshotError("snapshot '" + path + "': " + what);
}

std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) s += ',';
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

format::RawHeader read_header(hid_t file, const std::string& path) {
  using namespace format;
  auto at = [&](const char* name) { return h5::AttrRef{file, path, "/", name}; };
  RawHeader raw;
  raw.format_version = h5::read_u64(at(kAttrFormatVersion));
  const auto& f = raw.format_version;
  if (!f || *f < kOldestFormatVersion || *f > kFormatVersion) return raw;  // parse_header says why
  // Format 1 stored variable-length strings; format 2 never does, so a format-2 file with one is
  // refused before HDF5 reads it (HDF5 1.10's variable-length reader crashes on damaged ones).
  const bool variable = *f == 1;
  raw.model = h5::read_string(at(kAttrModel), variable);
  raw.version = h5::read_u64(at(kAttrVersion));
  raw.chunk_bytes = h5::read_u64(at(kAttrChunkBytes));
  raw.manifest_json = h5::read_string(at(kAttrManifest), variable);
  raw.created_by = h5::read_string(at(kAttrCreatedBy), variable);
  raw.created_at = h5::read_string(at(kAttrCreatedAt), variable);
  return raw;
}

std::vector<std::int64_t> dataset_shape(hid_t ds, const std::string& path, const std::string& object) {
  h5::Dataspace space(H5Dget_space(ds), path, "reading the dataspace of dataset " + object);
  const H5S_class_t cls = H5Sget_simple_extent_type(space.get());
  if (cls == H5S_SCALAR) return {};
  if (cls != H5S_SIMPLE) bad(path, "dataset " + object + " has an empty (null) dataspace");
  const int rank = H5Sget_simple_extent_ndims(space.get());
  if (rank < 0) h5::fail(path, "reading the dataspace of dataset " + object);
  std::vector<hsize_t> dims(static_cast<std::size_t>(rank));
  if (H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr) < 0) {
    h5::fail(path, "reading the dataspace of dataset " + object);
  }
  std::vector<std::int64_t> shape;
  for (const auto d : dims) {
    if (d > static_cast<hsize_t>(INT64_MAX)) bad(path, "dataset " + object + " has an absurd dimension");
    shape.push_back(static_cast<std::int64_t>(d));
  }
  return shape;
}

}  // namespace

OpenSnapshot open_snapshot(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const auto st = fs::status(path, ec);
  if (!fs::exists(st)) bad(path, ec && ec != std::errc::no_such_file_or_directory ? ec.message() : "no such file");
  if (!fs::is_regular_file(st)) bad(path, "not a regular file");

  const htri_t is_hdf5 = H5Fis_hdf5(path.c_str());
  if (is_hdf5 < 0) h5::fail(path, "cannot read the file");
  if (is_hdf5 == 0) bad(path, "not an HDF5 file (no HDF5 signature)");

  OpenSnapshot snap;
  snap.path = path;
  h5::PropList fapl(H5Pcreate(H5P_FILE_ACCESS), path, "H5Pcreate(H5P_FILE_ACCESS)");
  h5::check(H5Pset_file_locking(fapl.get(), true, true), path, "H5Pset_file_locking");
  snap.file = h5::File(H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl.get()), path,
                       "cannot open the HDF5 file (truncated or damaged?)");
  snap.header = format::parse_header(read_header(snap.file.get(), path), path);
  if (!h5::check_tri(H5Lexists(snap.file.get(), format::kTensorsGroup, H5P_DEFAULT), path,
                     std::string("looking up ") + format::kTensorsGroup)) {
    bad(path, std::string("group ") + format::kTensorsGroup + " is missing");
  }
  snap.tensors = h5::Group(H5Gopen2(snap.file.get(), format::kTensorsGroup, H5P_DEFAULT), path,
                           std::string("opening group ") + format::kTensorsGroup);
  snap.file_bytes = fs::file_size(path, ec);
  return snap;
}

Object open_tensor(const OpenSnapshot& snap, std::uint32_t index) {
  const std::string& path = snap.path;
  const Manifest& m = snap.header.manifest;
  const TensorEntry& e = m.tensors[index];
  const std::string name = format::dataset_name(e.spec.name);
  const std::string object = format::dataset_path(e.spec.name);
  if (!h5::check_tri(H5Lexists(snap.tensors.get(), name.c_str(), H5P_DEFAULT), path, "looking up " + object)) {
    bad(path, "dataset " + object + " (tensor '" + e.spec.name + "' of the manifest) is missing");
  }
  Object ds(H5Oopen(snap.tensors.get(), name.c_str(), H5P_DEFAULT), path, "opening " + object);
  if (H5Iget_type(ds.get()) != H5I_DATASET) bad(path, object + " is not a dataset");

  const auto shape = dataset_shape(ds.get(), path, object);
  if (shape != e.spec.shape) {
    bad(path,
        "dataset " + object + " has shape " + shape_text(shape) + " but the manifest says " + shape_text(e.spec.shape));
  }
  const h5::Datatype type(H5Dget_type(ds.get()), path, "reading the type of dataset " + object);
  if (!h5::type_matches(type.get(), e.spec.dtype, path)) {
    bad(path, "dataset " + object + " has type " + h5::describe_type(type.get()) + " but the manifest says " +
                  std::string(dtype_name(e.spec.dtype)));
  }

  auto attr = [&](const char* a) { return h5::AttrRef{ds.get(), path, object, a}; };
  auto missing = [&](const char* a) { bad(path, "dataset " + object + " has no attribute '" + a + "'"); };
  const bool variable = snap.header.format_version == 1;  // see read_header
  const auto stored_name = h5::read_string(attr(format::kAttrName), variable);
  if (!stored_name) missing(format::kAttrName);
  if (*stored_name != e.spec.name) {
    bad(path, "dataset " + object + " says it holds tensor '" + *stored_name + "', the manifest '" + e.spec.name + "'");
  }
  const auto dtype = h5::read_string(attr(format::kAttrDtype), variable);
  if (!dtype) missing(format::kAttrDtype);
  if (*dtype != dtype_name(e.spec.dtype)) {
    bad(path, "dataset " + object + " has dtype attribute '" + *dtype + "' but the manifest says " +
                  std::string(dtype_name(e.spec.dtype)));
  }
  const auto shard = h5::read_u64(attr(format::kAttrShard));
  if (!shard) missing(format::kAttrShard);
  if (*shard != e.shard) {
    bad(path, "dataset " + object + " has shard " + std::to_string(*shard) + " but the manifest says " +
                  std::to_string(e.shard));
  }
  const char* sums_attr = format::checksums_attribute(m.checksum_algorithm);
  const auto sums = h5::read_u64_array(attr(sums_attr), e.num_chunks);
  if (!sums) missing(sums_attr);
  if (sums->size() != e.num_chunks) {
    bad(path, "dataset " + object + " lists " + std::to_string(sums->size()) + " chunk checksums, the manifest " +
                  std::to_string(e.num_chunks));
  }
  for (std::uint32_t c = 0; c < e.num_chunks; ++c) {
    if ((*sums)[c] != m.chunks[e.first_chunk + c].checksum) {
      bad(path, "dataset " + object + " attribute '" + sums_attr + "' disagrees with the manifest at chunk " +
                    std::to_string(c));
    }
  }
  return ds;
}

}  // namespace tensorhub::snapshot::reader
