// write(path, ...): one process, the default (sec2) HDF5 driver, no MPI calls.
#include <filesystem>
#include <system_error>

#include "h5_handles.hpp"
#include "write_options.hpp"
#include "writer_common.hpp"

namespace tensorhub::snapshot {
namespace detail {

void write_serial(const std::string& path, const Manifest& manifest, std::span<const Tensor> tensors, bool overwrite,
                  const Progress& progress, std::uint64_t piece_bytes) {
  h5::ErrorSilencer quiet;
  writer::validate_manifest(manifest, path);
  const auto owner = writer::match_tensors(manifest, tensors, path);
  for (std::size_t i = 0; i < owner.size(); ++i) {
    if (owner[i] < 0) {
      throw SnapshotError("snapshot '" + path + "': tensor '" + manifest.tensors[i].spec.name +
                          "' of the manifest is not among the tensors passed");
    }
  }
  writer::check_overwrite(path, overwrite);

  const std::string tmp = path + ".tmp";
  try {
    h5::PropList fapl(H5Pcreate(H5P_FILE_ACCESS), tmp, "H5Pcreate(H5P_FILE_ACCESS)");
    writer::set_file_access(fapl.get(), tmp);
    h5::File file(H5Fcreate(tmp.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.get()), tmp, "creating the file");
    const auto header = format::make_header(manifest, writer::creator(), writer::now_utc_iso8601());
    auto datasets = writer::create_contents(file.get(), manifest, header, tmp);
    writer::ProgressMeter meter(progress, manifest.total_bytes());
    for (std::uint32_t i = 0; i < manifest.tensors.size(); ++i) {
      writer::write_tensor(datasets[i].get(), H5P_DEFAULT, manifest, i, tensors[static_cast<std::size_t>(owner[i])],
                           piece_bytes, meter, tmp);
    }
    for (auto& ds : datasets) ds.close(tmp, "closing a dataset");
    file.close(tmp, "closing (flushing) the file");
  } catch (...) {
    std::error_code ignored;
    std::filesystem::remove(tmp, ignored);
    throw;
  }
  writer::check_overwrite(path, overwrite);  // someone may have created it meanwhile
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    const std::string why = ec.message();
    std::filesystem::remove(tmp, ec);
    throw SnapshotError("snapshot '" + path + "': cannot rename " + tmp + " to it: " + why);
  }
}

}  // namespace detail

void write(const std::string& path, const Manifest& manifest, std::span<const Tensor> tensors, bool overwrite,
           const Progress& progress) {
  detail::write_serial(path, manifest, tensors, overwrite, progress, layout::kPieceBytes);
}

}  // namespace tensorhub::snapshot
