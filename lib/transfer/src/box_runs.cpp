#include "tensorhub/transfer/box_runs.hpp"

#include "tensorhub/core/error.hpp"

namespace tensorhub::transfer {
namespace {

// Row-major strides in elements of a box's extent.
std::vector<std::uint64_t> strides_of(const std::vector<std::int64_t>& extent) {
  std::vector<std::uint64_t> s(extent.size(), 1);
  for (std::size_t d = extent.size(); d-- > 1;) s[d - 1] = s[d] * static_cast<std::uint64_t>(extent[d]);
  return s;
}

}  // namespace

std::vector<Run> box_runs(const Box& src, const Box& dst, std::uint64_t elem) {
  if (elem == 0) throw UserError("box_runs: elements of 0 bytes");
  if (src.offset.size() != dst.offset.size()) {
    throw UserError("box_runs: source box " + describe(src) + " and destination box " + describe(dst) +
                    " differ in rank");
  }
  const auto cut = intersect(src, dst);
  if (!cut) return {};
  const std::size_t n = cut->offset.size();
  if (n == 0) return {Run{0, 0, elem, 1, 0, 0}};
  for (std::size_t d = 0; d < n; ++d) {
    if (cut->extent[d] <= 0) return {};
  }
  const auto ss = strides_of(src.extent);
  const auto ds = strides_of(dst.extent);
  // The segment: the innermost dimensions the intersection, the source and the destination all
  // span whole, and the one outside them (partly). Dimensions 0..j-1 repeat it.
  std::size_t j = n - 1;
  while (j > 0 && cut->extent[j] == src.extent[j] && cut->extent[j] == dst.extent[j]) --j;
  std::uint64_t seg = 1;
  for (std::size_t d = j; d < n; ++d) seg *= static_cast<std::uint64_t>(cut->extent[d]);
  std::uint64_t src0 = 0;
  std::uint64_t dst0 = 0;
  for (std::size_t d = 0; d < n; ++d) {
    src0 += static_cast<std::uint64_t>(cut->offset[d] - src.offset[d]) * ss[d];
    dst0 += static_cast<std::uint64_t>(cut->offset[d] - dst.offset[d]) * ds[d];
  }
  if (j == 0) return {Run{src0 * elem, dst0 * elem, seg * elem, 1, 0, 0}};
  // Dimension j-1 is the run's stride; dimensions 0..j-2 give one run each (row-major order).
  const std::size_t outer = j - 1;
  const auto count = static_cast<std::uint64_t>(cut->extent[outer]);
  std::vector<Run> runs;
  std::vector<std::int64_t> idx(outer, 0);
  for (;;) {
    std::uint64_t s = src0;
    std::uint64_t t = dst0;
    for (std::size_t d = 0; d < outer; ++d) {
      s += static_cast<std::uint64_t>(idx[d]) * ss[d];
      t += static_cast<std::uint64_t>(idx[d]) * ds[d];
    }
    runs.push_back(Run{s * elem, t * elem, seg * elem, count, ss[outer] * elem, ds[outer] * elem});
    std::size_t d = outer;
    while (d > 0) {
      --d;
      if (++idx[d] < cut->extent[d]) break;
      idx[d] = 0;
      if (d == 0) return runs;
    }
    if (outer == 0) return runs;
  }
}

std::uint64_t run_bytes(std::span<const Run> runs) {
  std::uint64_t n = 0;
  for (const auto& r : runs) n += r.length * r.count;
  return n;
}

bool touches(std::span<const Run> runs, std::uint64_t begin, std::uint64_t end) {
  for (const auto& r : runs) {
    std::uint64_t first = 0;
    std::uint64_t last = 0;
    detail::segments_in(r, begin, end, first, last);
    if (first < last) return true;
  }
  return false;
}

std::optional<std::uint64_t> direct_offset(std::span<const Run> runs, std::uint64_t begin, std::uint64_t end) {
  std::optional<std::uint64_t> at;
  int pieces = 0;
  for_each_piece(runs, begin, end, [&](std::uint64_t lo, std::uint64_t dst, std::uint64_t len) {
    ++pieces;
    if (lo == begin && len == end - begin) at = dst;
  });
  if (pieces != 1) return std::nullopt;
  return at;
}

}  // namespace tensorhub::transfer
