#include "layout.hpp"

#include <algorithm>

#include "tensorhub/core/error.hpp"

namespace tensorhub::snapshot::layout {

PiecePlan::PiecePlan(std::uint64_t bytes, std::uint64_t elem_size, std::uint64_t chunk_bytes, std::uint64_t piece_bytes)
    : bytes_(bytes), elem_(elem_size), chunk_(chunk_bytes) {
  require(bytes > 0 && elem_size > 0 && chunk_bytes > 0 && bytes % elem_size == 0, "PiecePlan arguments");
  chunks_ = (bytes + chunk_bytes - 1) / chunk_bytes;
  chunks_per_piece_ = std::max<std::uint64_t>(1, piece_bytes / chunk_bytes);
  pieces_ = (chunks_ + chunks_per_piece_ - 1) / chunks_per_piece_;
}

Piece PiecePlan::at(std::uint64_t index) const {
  require(index < pieces_, "piece index out of range");
  Piece p;
  p.first_chunk = index * chunks_per_piece_;
  p.end_chunk = std::min(p.first_chunk + chunks_per_piece_, chunks_);
  const std::uint64_t first_byte = p.first_chunk * chunk_;
  const std::uint64_t end_byte = std::min(p.end_chunk * chunk_, bytes_);
  p.first_elem = first_byte / elem_;
  p.num_elems = (end_byte + elem_ - 1) / elem_ - p.first_elem;
  return p;
}

std::uint64_t PiecePlan::max_elems() const {
  // Every piece but the last spans chunks_per_piece_ chunks; a boundary inside an element adds
  // at most one element at each end.
  const std::uint64_t span = std::min(chunks_per_piece_ * chunk_, bytes_);
  return span / elem_ + 2;
}

std::vector<Block> flat_range_blocks(std::span<const std::uint64_t> dims, std::uint64_t first, std::uint64_t count) {
  const std::size_t n = dims.size();
  require(n > 0 && count > 0, "flat_range_blocks arguments");
  // unit[k]: elements spanned by one step of dimension k (row-major strides).
  std::vector<std::uint64_t> unit(n, 1);
  for (std::size_t k = n - 1; k > 0; --k) unit[k - 1] = unit[k] * dims[k];
  require(first + count <= unit[0] * dims[0], "flat range beyond the array");

  std::vector<Block> blocks;
  // A block at level k covers [from, to): both multiples of unit[k], inside one unit[k-1] span.
  auto emit = [&](std::size_t k, std::uint64_t from, std::uint64_t to) {
    Block b;
    b.start.assign(n, 0);
    b.count.assign(n, 1);
    std::uint64_t rest = from;
    for (std::size_t i = 0; i <= k; ++i) {
      b.start[i] = rest / unit[i];
      rest %= unit[i];
    }
    b.count[k] = (to - from) / unit[k];
    for (std::size_t i = k + 1; i < n; ++i) b.count[i] = dims[i];
    blocks.push_back(std::move(b));
  };

  const std::uint64_t end = first + count;
  std::uint64_t cur = first;
  std::size_t k = n - 1;
  // Ascend: finish partial rows, innermost first, while the next boundary is within range.
  while (k > 0) {
    const std::uint64_t up = (cur + unit[k - 1] - 1) / unit[k - 1] * unit[k - 1];
    if (up > end) break;
    if (up > cur) emit(k, cur, up);
    cur = up;
    --k;
  }
  // Descend: whole units of level k, then of each finer level, up to `end`.
  for (std::size_t j = k; j < n; ++j) {
    const std::uint64_t down = end / unit[j] * unit[j];
    if (down > cur) {
      emit(j, cur, down);
      cur = down;
    }
  }
  require(cur == end, "flat_range_blocks did not reach the end of the range");
  return blocks;
}

}  // namespace tensorhub::snapshot::layout
