#include "io.hpp"

#include <cstdio>
#include <utility>

#include "layout.hpp"
#include "tensorhub/core/checksum.hpp"

namespace tensorhub::snapshot::io {

TensorIo::TensorIo(hid_t dataset, hid_t mem_type, hid_t dxpl, const std::vector<std::int64_t>& shape,
                   std::string_view file, std::string object)
    : dataset_(dataset), mem_type_(mem_type), dxpl_(dxpl), file_(file), object_(std::move(object)) {
  for (const auto d : shape) dims_.push_back(static_cast<std::uint64_t>(d));
  file_space_ = h5::Dataspace(H5Dget_space(dataset_), file_, "reading the dataspace of dataset " + object_);
}

void TensorIo::select(std::uint64_t first, std::uint64_t count, h5::Dataspace& mem) {
  const hsize_t n[1] = {count};
  mem = h5::Dataspace(H5Screate_simple(1, n, nullptr), file_, "H5Screate_simple");
  const std::string what = "selecting elements of dataset " + object_;
  if (dims_.empty()) {
    h5::check(H5Sselect_all(file_space_.get()), file_, what);
    return;
  }
  const auto blocks = layout::flat_range_blocks(dims_, first, count);
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    // hsize_t is unsigned long long; the plan uses uint64_t (unsigned long): same width.
    static_assert(sizeof(hsize_t) == sizeof(std::uint64_t));
    std::vector<hsize_t> start(blocks[i].start.begin(), blocks[i].start.end());
    std::vector<hsize_t> cnt(blocks[i].count.begin(), blocks[i].count.end());
    h5::check(H5Sselect_hyperslab(file_space_.get(), i == 0 ? H5S_SELECT_SET : H5S_SELECT_OR, start.data(), nullptr,
                                  cnt.data(), nullptr),
              file_, what);
  }
}

void TensorIo::write(std::uint64_t first, std::uint64_t count, const void* buf) {
  h5::Dataspace mem;
  select(first, count, mem);
  h5::check(
      H5Dwrite(dataset_, mem_type_, mem.get(), file_space_.get(), dxpl_, buf), file_,
      "writing elements " + std::to_string(first) + ".." + std::to_string(first + count) + " of dataset " + object_);
}

void TensorIo::read(std::uint64_t first, std::uint64_t count, void* buf) {
  h5::Dataspace mem;
  select(first, count, mem);
  h5::check(
      H5Dread(dataset_, mem_type_, mem.get(), file_space_.get(), dxpl_, buf), file_,
      "reading elements " + std::to_string(first) + ".." + std::to_string(first + count) + " of dataset " + object_);
}

void TensorIo::write_nothing() {
  const hsize_t n[1] = {1};
  h5::Dataspace mem(H5Screate_simple(1, n, nullptr), file_, "H5Screate_simple");
  const std::string what = "empty collective write to dataset " + object_;
  h5::check(H5Sselect_none(mem.get()), file_, what);
  h5::check(H5Sselect_none(file_space_.get()), file_, what);
  h5::check(H5Dwrite(dataset_, mem_type_, mem.get(), file_space_.get(), dxpl_, nullptr), file_, what);
}

std::optional<std::string> check_chunk(const Manifest& manifest, std::uint32_t tensor, std::uint64_t chunk,
                                       const unsigned char* bytes) {
  const auto& entry = manifest.tensors[tensor];
  const auto& spec = manifest.chunks[entry.first_chunk + chunk];
  const std::uint64_t sum = checksum64(manifest.checksum_algorithm, bytes, spec.length);
  if (sum == spec.checksum) return std::nullopt;
  char hex[64];
  std::snprintf(hex, sizeof hex, "%s 0x%016llx != manifest 0x%016llx",
                std::string(checksum_algorithm_name(manifest.checksum_algorithm)).c_str(),
                static_cast<unsigned long long>(sum), static_cast<unsigned long long>(spec.checksum));
  return "tensor '" + entry.spec.name + "' chunk " + std::to_string(chunk) + " (bytes " + std::to_string(spec.offset) +
         ".." + std::to_string(spec.offset + spec.length) + "): " + hex;
}

}  // namespace tensorhub::snapshot::io
