// write(comm, path, ...): parallel HDF5 over MPI-IO. Every rank creates the same metadata
// (collective), each tensor's owner writes its bytes, rank 0 renames the finished file. Every
// step that can fail runs under collective::attempt and ends in collective::agree, so an error
// on one rank becomes the same error on all of them instead of a hang.
#include <climits>
#include <filesystem>
#include <system_error>

#include "collective.hpp"
#include "h5_types.hpp"
#include "io.hpp"
#include "tensorhub/core/checksum.hpp"
#include "tensorhub/core/manifest_json.hpp"
#include "tensorhub/mpi/mpi.hpp"
#include "write_options.hpp"
#include "writer_common.hpp"

namespace tensorhub::snapshot {
namespace detail {
namespace {

[[noreturn]] void bad(const std::string& path, const std::string& what) {
  throw SnapshotError("snapshot '" + path + "': " + what);
}

// Same result on every rank, so every rank throws the same error without further agreement.
void check_same_manifest(MPI_Comm comm, const Manifest& manifest, const std::string& path) {
  const std::string json = manifest_to_json(manifest);
  const std::uint64_t h = checksum64(json.data(), json.size());
  std::uint64_t lo = 0;
  std::uint64_t hi = 0;
  mpi::check(MPI_Allreduce(&h, &lo, 1, MPI_UINT64_T, MPI_MIN, comm), "MPI_Allreduce in snapshot::write");
  mpi::check(MPI_Allreduce(&h, &hi, 1, MPI_UINT64_T, MPI_MAX, comm), "MPI_Allreduce in snapshot::write");
  if (lo != hi) bad(path, "the ranks passed different manifests; every rank must pass the same one");
}

// Every manifest tensor must be passed by exactly one rank (same result on every rank).
void check_ownership(MPI_Comm comm, int rank, const Manifest& m, const std::vector<int>& owner,
                     const std::string& path) {
  const int n = static_cast<int>(m.tensors.size());
  std::vector<int> count(owner.size()), first(owner.size()), last(owner.size());
  for (std::size_t i = 0; i < owner.size(); ++i) {
    count[i] = owner[i] >= 0 ? 1 : 0;
    first[i] = owner[i] >= 0 ? rank : INT_MAX;
    last[i] = owner[i] >= 0 ? rank : -1;
  }
  const char* what = "MPI_Allreduce in snapshot::write";
  mpi::check(MPI_Allreduce(MPI_IN_PLACE, count.data(), n, MPI_INT, MPI_SUM, comm), what);
  mpi::check(MPI_Allreduce(MPI_IN_PLACE, first.data(), n, MPI_INT, MPI_MIN, comm), what);
  mpi::check(MPI_Allreduce(MPI_IN_PLACE, last.data(), n, MPI_INT, MPI_MAX, comm), what);
  std::string problems;
  int shown = 0;
  int bad_tensors = 0;
  for (std::size_t i = 0; i < owner.size(); ++i) {
    if (count[i] == 1) continue;
    ++bad_tensors;
    if (shown++ == 3) problems += "; ...";
    if (shown > 3) continue;
    if (!problems.empty()) problems += "; ";
    problems += "tensor '" + m.tensors[i].spec.name + "' ";
    problems += count[i] == 0 ? "by no rank"
                              : "by " + std::to_string(count[i]) + " ranks (e.g. " + std::to_string(first[i]) +
                                    " and " + std::to_string(last[i]) + ")";
  }
  if (bad_tensors > 0) {
    bad(path, "each manifest tensor must be passed by exactly one rank, but " + std::to_string(bad_tensors) +
                  " are not: " + problems);
  }
}

// Collective transfer: every rank joins every piece's H5Dwrite, non-owners with nothing.
std::optional<collective::Failure> write_all_collective(const std::vector<h5::Dataset>& datasets, hid_t dxpl,
                                                        const Manifest& m, const std::vector<int>& owner,
                                                        std::span<const Tensor> local, std::uint64_t piece_bytes,
                                                        writer::ProgressMeter& meter, const std::string& tmp) {
  std::optional<collective::Failure> failed;
  for (std::uint32_t i = 0; i < m.tensors.size(); ++i) {
    const auto& e = m.tensors[i];
    const std::uint64_t es = dtype_size(e.spec.dtype);
    const auto type = h5::make_type(e.spec.dtype, tmp);
    io::TensorIo tio(datasets[i].get(), type.get(), dxpl, e.spec.shape, tmp, format::dataset_path(e.spec.name));
    const layout::PiecePlan plan(e.spec.bytes(), es, m.chunk_bytes, piece_bytes);
    const auto* base = owner[i] >= 0 ? static_cast<const unsigned char*>(local[owner[i]].data) : nullptr;
    for (std::uint64_t p = 0; p < plan.size(); ++p) {
      const auto piece = plan.at(p);
      bool joined = false;
      if (base != nullptr && !failed) {
        failed = collective::attempt([&] {
          writer::check_source_chunks(m, i, piece, base, tmp);
          joined = true;
          tio.write(piece.first_elem, piece.num_elems, base + piece.first_elem * es);
          for (auto c = piece.first_chunk; c < piece.end_chunk; ++c) meter.add(m.chunks[e.first_chunk + c].length);
        });
      }
      if (!joined) {
        auto f = collective::attempt([&] { tio.write_nothing(); });
        if (!failed) failed = std::move(f);
      }
    }
  }
  return failed;
}

void write_file(MPI_Comm comm, const std::string& tmp, const Manifest& m, const format::RawHeader& header,
                const std::vector<int>& owner, std::span<const Tensor> local, const Progress& progress,
                const WriteOptions& options) {
  h5::PropList fapl(H5Pcreate(H5P_FILE_ACCESS), tmp, "H5Pcreate(H5P_FILE_ACCESS)");
  h5::check(H5Pset_fapl_mpio(fapl.get(), comm, MPI_INFO_NULL), tmp, "H5Pset_fapl_mpio");
  h5::check(H5Pset_all_coll_metadata_ops(fapl.get(), true), tmp, "H5Pset_all_coll_metadata_ops");
  h5::check(H5Pset_coll_metadata_write(fapl.get(), true), tmp, "H5Pset_coll_metadata_write");
  writer::set_file_access(fapl.get(), tmp);
  h5::PropList dxpl(H5Pcreate(H5P_DATASET_XFER), tmp, "H5Pcreate(H5P_DATASET_XFER)");
  const bool coll = options.transfer == Transfer::kCollective;
  h5::check(H5Pset_dxpl_mpio(dxpl.get(), coll ? H5FD_MPIO_COLLECTIVE : H5FD_MPIO_INDEPENDENT), tmp, "H5Pset_dxpl_mpio");

  h5::File file;
  std::vector<h5::Dataset> datasets;
  collective::agree(comm, collective::attempt([&] {
                      file = h5::File(H5Fcreate(tmp.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.get()), tmp,
                                      "creating the file (MPI-IO)");
                      datasets = writer::create_contents(file.get(), m, header, tmp);
                    }));

  std::uint64_t local_bytes = 0;
  for (std::size_t i = 0; i < owner.size(); ++i) {
    if (owner[i] >= 0) local_bytes += m.tensors[i].spec.bytes();
  }
  writer::ProgressMeter meter(progress, local_bytes);
  std::optional<collective::Failure> failed;
  if (coll) {
    failed = write_all_collective(datasets, dxpl.get(), m, owner, local, options.piece_bytes, meter, tmp);
  } else {
    failed = collective::attempt([&] {
      for (std::uint32_t i = 0; i < m.tensors.size(); ++i) {
        if (owner[i] < 0) continue;
        writer::write_tensor(datasets[i].get(), dxpl.get(), m, i, local[owner[i]], options.piece_bytes, meter, tmp);
      }
    });
  }
  auto closed = collective::attempt([&] {
    for (auto& ds : datasets) ds.close(tmp, "closing a dataset");
    file.close(tmp, "closing (flushing) the file");
  });
  collective::agree(comm, failed ? failed : closed);
}

}  // namespace

void write_parallel(MPI_Comm comm_in, const std::string& path, const Manifest& manifest,
                    std::span<const Tensor> local_tensors, bool overwrite, const Progress& progress,
                    const WriteOptions& options) {
  h5::ErrorSilencer quiet;
  int initialized = 0;
  int finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (!initialized || finalized) {
    bad(path, "parallel write needs MPI to be initialised (use write(path, ...) without a communicator)");
  }
  const mpi::Comm comm = mpi::Comm::duplicate(comm_in);
  const int rank = comm.rank();

  std::vector<int> owner;
  collective::agree(comm.get(), collective::attempt([&] {
                      writer::validate_manifest(manifest, path);
                      owner = writer::match_tensors(manifest, local_tensors, path);
                    }));
  check_same_manifest(comm.get(), manifest, path);
  check_ownership(comm.get(), rank, manifest, owner, path);
  std::optional<collective::Failure> failed;
  if (rank == 0) failed = collective::attempt([&] { writer::check_overwrite(path, overwrite); });
  collective::agree(comm.get(), failed);

  const std::string created_at = mpi::bcast_string(comm.get(), 0, writer::now_utc_iso8601());
  const auto header = format::make_header(manifest, writer::creator(), created_at);
  const std::string tmp = path + ".tmp";
  try {
    write_file(comm.get(), tmp, manifest, header, owner, local_tensors, progress, options);
  } catch (...) {
    std::error_code ignored;
    if (rank == 0) std::filesystem::remove(tmp, ignored);
    throw;
  }
  if (rank == 0) {
    failed = collective::attempt([&] {
      writer::check_overwrite(path, overwrite);  // someone may have created it meanwhile
      std::error_code ec;
      std::filesystem::rename(tmp, path, ec);
      if (ec) bad(path, "cannot rename " + tmp + " to it: " + ec.message());
    });
    std::error_code ignored;
    if (failed) std::filesystem::remove(tmp, ignored);
  }
  collective::agree(comm.get(), failed);
}

}  // namespace detail

void write(MPI_Comm comm, const std::string& path, const Manifest& manifest, std::span<const Tensor> local_tensors,
           bool overwrite, const Progress& progress) {
  detail::write_parallel(comm, path, manifest, local_tensors, overwrite, progress, detail::WriteOptions{});
}

}  // namespace tensorhub::snapshot
