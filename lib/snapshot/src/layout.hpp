// How a tensor's flat bytes map onto I/O calls on its multi-dimensional dataset.
//
// Chunks are byte ranges of the flattened (row-major) tensor. I/O goes in pieces of whole
// chunks (about kPieceBytes, never above 1 GiB + one element, so no single HDF5 / MPI-IO call
// reaches the 2 GiB limit of HDF5 1.10). A piece covers the elements its bytes touch; a chunk
// boundary inside an element makes two neighbouring pieces share that element (read or written
// twice with the same value). A piece's element range is selected in the dataset as a union of
// at most 2*rank-1 hyperslabs (flat_range_blocks). Pure arithmetic: unit-tested and fuzzed.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace tensorhub::snapshot::layout {

inline constexpr std::uint64_t kPieceBytes = 64ull << 20;

struct Piece {
  std::uint64_t first_elem = 0;  // element range [first_elem, first_elem + num_elems)
  std::uint64_t num_elems = 0;
  std::uint64_t first_chunk = 0;  // chunks [first_chunk, end_chunk) are complete after this piece
  std::uint64_t end_chunk = 0;
};

class PiecePlan {
 public:
  // `bytes` > 0, `elem_size` in 1..8, `chunk_bytes` > 0, `bytes` a multiple of `elem_size`.
  PiecePlan(std::uint64_t bytes, std::uint64_t elem_size, std::uint64_t chunk_bytes,
            std::uint64_t piece_bytes = kPieceBytes);
  std::uint64_t size() const { return pieces_; }
  std::uint64_t chunks() const { return chunks_; }
  Piece at(std::uint64_t index) const;
  // Largest num_elems of any piece (scratch buffer size, in elements).
  std::uint64_t max_elems() const;

 private:
  std::uint64_t bytes_, elem_, chunk_, chunks_, chunks_per_piece_, pieces_;
};

// One hyperslab: start and count per dimension (block and stride 1).
struct Block {
  std::vector<std::uint64_t> start;
  std::vector<std::uint64_t> count;
};

// Hyperslabs whose union is the flat element range [first, first + count) of an array of shape
// `dims` (row-major), in flat order; count > 0 and first + count <= product(dims). At most
// 2 * dims.size() - 1 blocks. Empty `dims` (a scalar) is not handled here: select all.
std::vector<Block> flat_range_blocks(std::span<const std::uint64_t> dims, std::uint64_t first, std::uint64_t count);

}  // namespace tensorhub::snapshot::layout
