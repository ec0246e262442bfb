#include "writer_common.hpp"

#include <chrono>
#include <ctime>
#include <filesystem>
#include <set>

#include "h5_attr.hpp"
#include "h5_types.hpp"
#include "io.hpp"
#include "tensorhub/config.hpp"
#include "tensorhub/core/manifest_json.hpp"

namespace tensorhub::snapshot::writer {
namespace {

[[noreturn]] void bad(const std::string& path, const std::string& what) {
  throw SnapshotError("snapshot '" + path + "': " + what);
}

}  // namespace

void validate_manifest(const Manifest& manifest, const std::string& path) {
  if (manifest.model.find('\0') != std::string::npos) bad(path, "the model name contains a NUL byte");
  // What inspect will do with the header we are about to write: catch an inconsistent manifest
  // (hand-built chunk lists, overflowing shapes) now rather than leave an unreadable file.
  const auto header = format::make_header(manifest, creator(), now_utc_iso8601());
  Manifest back;
  try {
    back = format::parse_header(header, path).manifest;
  } catch (const SnapshotError& e) {
    throw SnapshotError(std::string("cannot write: the manifest is not valid: ") + e.what());
  }
  if (!(back == manifest)) {
    bad(path,
        "cannot write: the manifest is not consistent (its chunk list does not match its tensors and "
        "chunk size; build it with assemble_manifest)");
  }
}

std::vector<int> match_tensors(const Manifest& manifest, std::span<const Tensor> tensors, const std::string& path) {
  std::vector<int> owner(manifest.tensors.size(), -1);
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    const auto idx = manifest.find(t.spec.name);
    if (!idx) bad(path, "tensor '" + t.spec.name + "' is not in the manifest");
    if (owner[*idx] >= 0) bad(path, "tensor '" + t.spec.name + "' is passed twice");
    const TensorSpec& want = manifest.tensors[*idx].spec;
    // Dtype and shape: a relay's pull buffers name a box of a global tensor without repeating its
    // layout, which the manifest carries (and the file keeps in its manifest attribute).
    if (t.spec.dtype != want.dtype || t.spec.shape != want.shape) {
      bad(path, "tensor '" + t.spec.name + "' is " + describe(t.spec) + " but the manifest says " + describe(want));
    }
    if (t.data == nullptr) bad(path, "tensor '" + t.spec.name + "' has a null data pointer");
    if (t.bytes < want.bytes()) {
      bad(path, "tensor '" + t.spec.name + "' needs " + std::to_string(want.bytes()) + " bytes but its buffer has " +
                    std::to_string(t.bytes));
    }
    if (t.memory != MemoryKind::kHost) bad(path, "tensor '" + t.spec.name + "': only host memory can be written");
    owner[*idx] = static_cast<int>(i);
  }
  return owner;
}

void check_overwrite(const std::string& path, bool overwrite) {
  std::error_code ec;
  const bool exists = std::filesystem::exists(std::filesystem::symlink_status(path, ec));
  if (exists && !overwrite) bad(path, "the file exists; pass overwrite=true to replace it");
}

std::string now_utc_iso8601() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string creator() { return std::string("tensorhub ") + TENSORHUB_VERSION; }

void set_file_access(hid_t fapl, const std::string& path) {
  // The 1.10 file format: superblock v3 and v2 object headers, every metadata block checksummed
  // by HDF5 (a damaged block is an error, not a crash); readable by HDF5 >= 1.10.
  h5::check(H5Pset_libver_bounds(fapl, H5F_LIBVER_V110, H5F_LIBVER_V110), path, "H5Pset_libver_bounds");
  h5::check(H5Pset_file_locking(fapl, true, true), path, "H5Pset_file_locking");
}

std::vector<h5::Dataset> create_contents(hid_t file, const Manifest& m, const format::RawHeader& hdr,
                                         const std::string& path) {
  using namespace format;
  auto at = [&](const char* name) { return h5::AttrRef{file, path, "/", name}; };
  h5::write_u32(at(kAttrFormatVersion), static_cast<std::uint32_t>(*hdr.format_version));
  h5::write_string(at(kAttrModel), *hdr.model);
  h5::write_u64(at(kAttrVersion), *hdr.version);
  h5::write_u64(at(kAttrChunkBytes), *hdr.chunk_bytes);
  h5::write_string(at(kAttrManifest), *hdr.manifest_json);
  h5::write_string(at(kAttrCreatedBy), *hdr.created_by);
  h5::write_string(at(kAttrCreatedAt), *hdr.created_at);

  h5::Datatype bf16;
  for (const auto& t : m.tensors) {
    if (t.spec.dtype == DType::kBF16) {
      bf16 = h5::commit_bf16(file, path);
      break;
    }
  }
  h5::PropList lcpl(H5Pcreate(H5P_LINK_CREATE), path, "H5Pcreate(H5P_LINK_CREATE)");
  h5::check(H5Pset_char_encoding(lcpl.get(), H5T_CSET_UTF8), path, "H5Pset_char_encoding");
  h5::Group tensors(H5Gcreate2(file, kTensorsGroup, lcpl.get(), H5P_DEFAULT, H5P_DEFAULT), path,
                    std::string("creating group ") + kTensorsGroup);
  h5::PropList dcpl(H5Pcreate(H5P_DATASET_CREATE), path, "H5Pcreate(H5P_DATASET_CREATE)");
  h5::check(H5Pset_layout(dcpl.get(), H5D_CONTIGUOUS), path, "H5Pset_layout");
  h5::check(H5Pset_alloc_time(dcpl.get(), H5D_ALLOC_TIME_EARLY), path, "H5Pset_alloc_time");
  h5::check(H5Pset_fill_time(dcpl.get(), H5D_FILL_TIME_NEVER), path, "H5Pset_fill_time");

  std::vector<h5::Dataset> out;
  out.reserve(m.tensors.size());
  for (std::uint32_t i = 0; i < m.tensors.size(); ++i) {
    const auto& e = m.tensors[i];
    const std::string object = dataset_path(e.spec.name);
    h5::Dataspace space;
    if (e.spec.shape.empty()) {
      space = h5::Dataspace(H5Screate(H5S_SCALAR), path, "H5Screate");
    } else {
      const std::vector<hsize_t> dims(e.spec.shape.begin(), e.spec.shape.end());
      space = h5::Dataspace(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr), path,
                            "creating the dataspace of " + object);
    }
    h5::Datatype own;
    if (e.spec.dtype != DType::kBF16) own = h5::make_type(e.spec.dtype, path);
    const hid_t type = e.spec.dtype == DType::kBF16 ? bf16.get() : own.get();
    h5::Dataset ds(H5Dcreate2(tensors.get(), dataset_name(e.spec.name).c_str(), type, space.get(), lcpl.get(),
                              dcpl.get(), H5P_DEFAULT),
                   path, "creating dataset " + object);
    auto attr = [&](const char* name) { return h5::AttrRef{ds.get(), path, object, name}; };
    h5::write_string(attr(kAttrName), e.spec.name);
    h5::write_string(attr(kAttrDtype), dtype_name(e.spec.dtype));
    h5::write_u32(attr(kAttrShard), e.shard);
    std::vector<std::uint64_t> sums(e.num_chunks);
    for (std::uint32_t c = 0; c < e.num_chunks; ++c) sums[c] = m.chunks[e.first_chunk + c].checksum;
    h5::write_u64_array(attr(checksums_attribute(m.checksum_algorithm)), sums);
    out.push_back(std::move(ds));
  }
  return out;
}

void check_source_chunks(const Manifest& m, std::uint32_t index, const layout::Piece& piece, const unsigned char* base,
                         const std::string& path) {
  for (std::uint64_t c = piece.first_chunk; c < piece.end_chunk; ++c) {
    if (auto mismatch = io::check_chunk(m, index, c, base + c * m.chunk_bytes)) {
      throw ChecksumError("snapshot '" + path + "': cannot write: the data of " + *mismatch +
                          " (the buffer changed after the manifest was computed?)");
    }
  }
}

void write_tensor(hid_t dataset, hid_t dxpl, const Manifest& m, std::uint32_t index, const Tensor& tensor,
                  std::uint64_t piece_bytes, ProgressMeter& progress, const std::string& path) {
  const auto& e = m.tensors[index];
  const std::uint64_t es = dtype_size(e.spec.dtype);
  const auto type = h5::make_type(e.spec.dtype, path);
  io::TensorIo tio(dataset, type.get(), dxpl, e.spec.shape, path, format::dataset_path(e.spec.name));
  const layout::PiecePlan plan(e.spec.bytes(), es, m.chunk_bytes, piece_bytes);
  const auto* base = static_cast<const unsigned char*>(tensor.data);
  for (std::uint64_t p = 0; p < plan.size(); ++p) {
    const auto piece = plan.at(p);
    check_source_chunks(m, index, piece, base, path);
    tio.write(piece.first_elem, piece.num_elems, base + piece.first_elem * es);
    for (std::uint64_t c = piece.first_chunk; c < piece.end_chunk; ++c)
      progress.add(m.chunks[e.first_chunk + c].length);
  }
}

}  // namespace tensorhub::snapshot::writer
