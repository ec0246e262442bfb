#include "tensorhub/mpi/datatype.hpp"

#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "tensorhub/core/error.hpp"
#include "tensorhub/mpi/mpi.hpp"

namespace tensorhub::mpi {
namespace {

constexpr std::uint64_t kIntMax = static_cast<std::uint64_t>(std::numeric_limits<int>::max());

bool equally_spaced(std::span<const std::uint64_t> offsets, std::span<const std::uint64_t> lengths) {
  if (offsets.size() < 2 || offsets[1] < offsets[0]) return false;
  const std::uint64_t stride = offsets[1] - offsets[0];
  for (std::size_t i = 1; i < offsets.size(); ++i) {
    if (lengths[i] != lengths[0] || offsets[i] - offsets[i - 1] != stride || offsets[i] < offsets[i - 1]) return false;
  }
  return true;
}

}  // namespace

Datatype Datatype::byte_pieces(std::span<const std::uint64_t> offsets, std::span<const std::uint64_t> lengths) {
  require(offsets.size() == lengths.size() && !offsets.empty(), "byte_pieces: one length per offset, at least one");
  require(offsets.size() <= kIntMax, "byte_pieces: too many pieces for one datatype");
  for (const auto l : lengths) require(l <= kIntMax, "byte_pieces: a piece longer than 2^31 - 1 bytes");
  MPI_Datatype t = MPI_DATATYPE_NULL;
  const int n = static_cast<int>(offsets.size());
  if (equally_spaced(offsets, lengths) && offsets[0] == 0) {
    check(MPI_Type_create_hvector(n, static_cast<int>(lengths[0]), static_cast<MPI_Aint>(offsets[1] - offsets[0]),
                                  MPI_BYTE, &t),
          "MPI_Type_create_hvector(" + std::to_string(n) + " pieces)");
  } else {
    std::vector<int> len(lengths.size());
    std::vector<MPI_Aint> disp(offsets.size());
    for (std::size_t i = 0; i < offsets.size(); ++i) {
      len[i] = static_cast<int>(lengths[i]);
      disp[i] = static_cast<MPI_Aint>(offsets[i]);
    }
    check(MPI_Type_create_hindexed(n, len.data(), disp.data(), MPI_BYTE, &t),
          "MPI_Type_create_hindexed(" + std::to_string(n) + " pieces)");
  }
  Datatype d(t);
  check(MPI_Type_commit(&d.type_), "MPI_Type_commit");
  return d;
}

Datatype::~Datatype() {
  if (type_ != MPI_DATATYPE_NULL) MPI_Type_free(&type_);
}

Datatype::Datatype(Datatype&& other) noexcept : type_(std::exchange(other.type_, MPI_DATATYPE_NULL)) {}

Datatype& Datatype::operator=(Datatype&& other) noexcept {
  if (this != &other) {
    if (type_ != MPI_DATATYPE_NULL) MPI_Type_free(&type_);
    type_ = std::exchange(other.type_, MPI_DATATYPE_NULL);
  }
  return *this;
}

}  // namespace tensorhub::mpi
