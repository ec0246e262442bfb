// Resharding reads (share/doc/architecture.md "Global tensors"): which bytes of a published box a
// destination box needs, and where in the destination they go. Both boxes are in the global
// tensor's coordinates and row-major; their intersection is a set of contiguous segments, equally
// spaced in the source and in the destination along each outer dimension. A Run is one such
// strided family; a box cut along dim 0 only (FSDP, column-parallel TP) gives one run of one
// segment, one cut along dim 1 (row-parallel TP) one run of one segment per row.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "tensorhub/core/box.hpp"

namespace tensorhub::transfer {

// `count` segments of `length` bytes: segment k is the source tensor's bytes
// [src + k * src_stride, + length), and goes to the destination's bytes [dst + k * dst_stride, + length).
struct Run {
  std::uint64_t src = 0;
  std::uint64_t dst = 0;
  std::uint64_t length = 0;
  std::uint64_t count = 1;
  std::uint64_t src_stride = 0;
  std::uint64_t dst_stride = 0;
  bool operator==(const Run&) const = default;
};

// The runs that copy the intersection of source box `src` and destination box `dst` (same rank,
// global coordinates) with elements of `elem` bytes, in source order; empty when they do not meet.
// UserError when the boxes differ in rank or elem is 0.
std::vector<Run> box_runs(const Box& src, const Box& dst, std::uint64_t elem);

// Bytes the runs copy.
std::uint64_t run_bytes(std::span<const Run> runs);

// Calls fn(src_offset, dst_offset, length) for each part of a segment of `runs` that lies in the
// source bytes [begin, end), run by run, in source order within each run.
template <class Fn>
void for_each_piece(std::span<const Run> runs, std::uint64_t begin, std::uint64_t end, Fn&& fn);

// Whether some segment of `runs` meets the source bytes [begin, end).
bool touches(std::span<const Run> runs, std::uint64_t begin, std::uint64_t end);

// When one segment of `runs` holds all of [begin, end) (and no other touches it): the destination
// offset of `begin`, so those bytes can be read straight into the destination.
std::optional<std::uint64_t> direct_offset(std::span<const Run> runs, std::uint64_t begin, std::uint64_t end);

// --- implementation of the template

namespace detail {
// The segments of `r` that meet [begin, end): [first, last).
inline void segments_in(const Run& r, std::uint64_t begin, std::uint64_t end, std::uint64_t& first,
                        std::uint64_t& last) {
  first = 0;
  last = 0;
  if (r.count == 0 || r.length == 0 || end <= r.src || begin >= end) return;
  if (r.count == 1 || r.src_stride == 0) {
    if (begin < r.src + r.length) last = 1;
    return;
  }
  // segment k meets [begin, end) iff src + k*stride < end and src + k*stride + length > begin
  first = begin < r.src + r.length ? 0 : (begin - r.src - r.length) / r.src_stride + 1;
  last = (end - r.src + r.src_stride - 1) / r.src_stride;
  if (last > r.count) last = r.count;
  if (first > last) first = last;
}
}  // namespace detail

template <class Fn>
void for_each_piece(std::span<const Run> runs, std::uint64_t begin, std::uint64_t end, Fn&& fn) {
  for (const auto& r : runs) {
    std::uint64_t first = 0;
    std::uint64_t last = 0;
    detail::segments_in(r, begin, end, first, last);
    for (std::uint64_t k = first; k < last; ++k) {
      const std::uint64_t s = r.src + k * r.src_stride;
      const std::uint64_t lo = s > begin ? s : begin;
      const std::uint64_t hi = s + r.length < end ? s + r.length : end;
      if (lo < hi) fn(lo, r.dst + k * r.dst_stride + (lo - s), hi - lo);
    }
  }
}

}  // namespace tensorhub::transfer
