// inspect, read and verify: serial HDF5 (sec2), no MPI, safe on any rank of a job.
#include <set>
#include <vector>

#include "h5_types.hpp"
#include "io.hpp"
#include "layout.hpp"
#include "open.hpp"

namespace tensorhub::snapshot {
namespace {

[[noreturn]] void bad(const std::string& path, const std::string& what) {
  throw SnapshotError("snapshot '" + path + "': " + what);
}

// Reads tensor `index` piece by piece into `out` (laid out as the whole tensor when `whole`,
// else a scratch buffer reused for every piece) and calls on_chunk(chunk, bytes) for each
// chunk once its piece is in memory.
template <class OnChunk>
void read_tensor(const reader::OpenSnapshot& snap, std::uint32_t index, unsigned char* out, bool whole,
                 OnChunk&& on_chunk) {
  const Manifest& m = snap.header.manifest;
  const auto& e = m.tensors[index];
  const auto ds = reader::open_tensor(snap, index);
  const auto type = h5::make_type(e.spec.dtype, snap.path);
  io::TensorIo tio(ds.get(), type.get(), H5P_DEFAULT, e.spec.shape, snap.path, format::dataset_path(e.spec.name));
  const std::uint64_t es = dtype_size(e.spec.dtype);
  const layout::PiecePlan plan(e.spec.bytes(), es, m.chunk_bytes);
  for (std::uint64_t p = 0; p < plan.size(); ++p) {
    const auto piece = plan.at(p);
    const std::uint64_t piece_offset = piece.first_elem * es;  // byte offset of the piece in the tensor
    unsigned char* dst = whole ? out + piece_offset : out;
    tio.read(piece.first_elem, piece.num_elems, dst);
    for (std::uint64_t c = piece.first_chunk; c < piece.end_chunk; ++c) {
      on_chunk(c, dst + (c * m.chunk_bytes - piece_offset));
    }
  }
}

}  // namespace

SnapshotInfo inspect(const std::string& path) {
  h5::ErrorSilencer quiet;
  auto snap = reader::open_snapshot(path);
  for (std::uint32_t i = 0; i < snap.header.manifest.tensors.size(); ++i) (void)reader::open_tensor(snap, i);
  SnapshotInfo info;
  info.path = path;
  info.format_version = snap.header.format_version;
  info.manifest = std::move(snap.header.manifest);
  info.created_by = std::move(snap.header.created_by);
  info.created_at = std::move(snap.header.created_at);
  info.file_bytes = snap.file_bytes;
  return info;
}

void read(const std::string& path, std::span<const Tensor> into, bool verify, const Progress& progress) {
  h5::ErrorSilencer quiet;
  const auto snap = reader::open_snapshot(path);
  const Manifest& m = snap.header.manifest;
  std::vector<std::uint32_t> index;
  std::set<std::string> seen;
  std::uint64_t total = 0;
  for (const auto& t : into) {
    const auto i = m.find(t.spec.name);
    if (!i) bad(path, "has no tensor '" + t.spec.name + "'");
    if (!seen.insert(t.spec.name).second) bad(path, "tensor '" + t.spec.name + "' is requested twice");
    const TensorSpec& have = m.tensors[*i].spec;
    if (!(t.spec.dtype == have.dtype && t.spec.shape == have.shape)) {
      bad(path, "tensor '" + t.spec.name + "' is " + describe(have) + " in the snapshot but the buffer is for " +
                    describe(t.spec));
    }
    if (t.data == nullptr) bad(path, "tensor '" + t.spec.name + "': null data pointer");
    if (t.bytes < have.bytes()) {
      bad(path, "tensor '" + t.spec.name + "' needs " + std::to_string(have.bytes()) + " bytes but its buffer has " +
                    std::to_string(t.bytes));
    }
    if (t.memory != MemoryKind::kHost) bad(path, "tensor '" + t.spec.name + "': only host memory can be read into");
    index.push_back(*i);
    total += have.bytes();
  }
  std::uint64_t done = 0;
  for (std::size_t k = 0; k < into.size(); ++k) {
    read_tensor(snap, index[k], static_cast<unsigned char*>(into[k].data), true,
                [&](std::uint64_t chunk, const unsigned char* bytes) {
                  if (verify) {
                    if (auto mismatch = io::check_chunk(m, index[k], chunk, bytes)) {
                      throw ChecksumError("snapshot '" + path + "': " + *mismatch);
                    }
                  }
                  done += m.chunks[m.tensors[index[k]].first_chunk + chunk].length;
                  if (progress) progress(done, total);
                });
  }
}

std::uint64_t read_chunks(const std::string& path, const std::string& tensor, std::span<const std::uint32_t> chunks,
                          bool verify, const std::function<void(std::uint32_t, const unsigned char*)>& on_chunk) {
  h5::ErrorSilencer quiet;
  const auto snap = reader::open_snapshot(path);
  const Manifest& m = snap.header.manifest;
  const auto index = m.find(tensor);
  if (!index) bad(path, "has no tensor '" + tensor + "'");
  const auto& e = m.tensors[*index];
  const std::uint64_t es = dtype_size(e.spec.dtype);
  if (m.chunk_bytes % es != 0) bad(path, "chunk size is not a multiple of the element size of '" + tensor + "'");
  const auto ds = reader::open_tensor(snap, *index);
  const auto type = h5::make_type(e.spec.dtype, snap.path);
  io::TensorIo tio(ds.get(), type.get(), H5P_DEFAULT, e.spec.shape, snap.path, format::dataset_path(e.spec.name));
  std::vector<unsigned char> scratch;
  std::set<std::uint32_t> seen;
  std::uint64_t bytes = 0;
  for (const auto c : chunks) {
    if (c >= e.num_chunks || !seen.insert(c).second) {
      bad(path, "chunk " + std::to_string(c) + " of '" + tensor + "' is out of range or asked for twice");
    }
    const auto& spec = m.chunks[e.first_chunk + c];
    scratch.resize(spec.length);
    tio.read(spec.offset / es, spec.length / es, scratch.data());
    if (verify) {
      if (auto mismatch = io::check_chunk(m, *index, c, scratch.data())) {
        throw ChecksumError("snapshot '" + path + "': " + *mismatch);
      }
    }
    on_chunk(c, scratch.data());
    bytes += spec.length;
  }
  return bytes;
}

VerifyReport verify(const std::string& path, const Progress& progress) {
  h5::ErrorSilencer quiet;
  const auto snap = reader::open_snapshot(path);
  const Manifest& m = snap.header.manifest;
  VerifyReport report;
  const std::uint64_t total = m.total_bytes();
  std::vector<unsigned char> scratch;
  for (std::uint32_t i = 0; i < m.tensors.size(); ++i) {
    const auto& spec = m.tensors[i].spec;
    const std::uint64_t es = dtype_size(spec.dtype);
    const layout::PiecePlan plan(spec.bytes(), es, m.chunk_bytes);
    if (scratch.size() < plan.max_elems() * es) scratch.resize(plan.max_elems() * es);
    read_tensor(snap, i, scratch.data(), false, [&](std::uint64_t chunk, const unsigned char* bytes) {
      if (auto mismatch = io::check_chunk(m, i, chunk, bytes)) report.mismatches.push_back(std::move(*mismatch));
      report.chunks += 1;
      report.bytes += m.chunks[m.tensors[i].first_chunk + chunk].length;
      if (progress) progress(report.bytes, total);
    });
  }
  return report;
}

}  // namespace tensorhub::snapshot
