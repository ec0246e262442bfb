// RAII for a committed MPI derived datatype: the origin side of a scattered MPI_Rget (a chunk of
// a box read whose rows land strided in the destination, share/doc/architecture.md "Global
// tensors"). Freeing it while an operation that uses it is in flight is allowed by MPI (the
// operation keeps what it needs), so one can go out of scope right after the Rget is posted.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <span>

namespace tensorhub::mpi {

class Datatype {
 public:
  // Bytes [offsets[i], + lengths[i]) of a buffer, in this order (each length below 2^31):
  // MPI_Type_create_hvector when the pieces are of one length and equally spaced (a strided box
  // edge), MPI_Type_create_hindexed otherwise. ContractViolation for unequal spans, none, or a
  // piece too long for an int.
  static Datatype byte_pieces(std::span<const std::uint64_t> offsets, std::span<const std::uint64_t> lengths);

  Datatype() = default;
  ~Datatype();
  Datatype(Datatype&& other) noexcept;
  Datatype& operator=(Datatype&& other) noexcept;
  Datatype(const Datatype&) = delete;
  Datatype& operator=(const Datatype&) = delete;

  [[nodiscard]] MPI_Datatype get() const { return type_; }

 private:
  explicit Datatype(MPI_Datatype t) : type_(t) {}
  MPI_Datatype type_ = MPI_DATATYPE_NULL;
};

}  // namespace tensorhub::mpi
