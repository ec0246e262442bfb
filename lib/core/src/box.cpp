#include "tensorhub/core/box.hpp"

#include <algorithm>
#include <limits>

#include "tensorhub/core/error.hpp"

namespace tensorhub {

std::uint64_t volume(const Box& box) {
  std::uint64_t n = 1;
  for (const auto e : box.extent) {
    if (e <= 0) return 0;
    const auto u = static_cast<std::uint64_t>(e);
    if (n > std::numeric_limits<std::uint64_t>::max() / u) throw UserError("box " + describe(box) + " is too large");
    n *= u;
  }
  return n;
}

Box split(std::span<const std::int64_t> global_shape, std::size_t dim, std::int64_t parts, std::int64_t index) {
  if (dim >= global_shape.size()) {
    throw UserError("split: dimension " + std::to_string(dim) + " of a rank-" + std::to_string(global_shape.size()) +
                    " tensor");
  }
  if (parts < 1 || index < 0 || index >= parts) {
    throw UserError("split: part " + std::to_string(index) + " of " + std::to_string(parts));
  }
  const std::int64_t n = global_shape[dim];
  const std::int64_t base = n / parts;
  const std::int64_t extra = n % parts;
  Box b{std::vector<std::int64_t>(global_shape.size(), 0), {global_shape.begin(), global_shape.end()}};
  b.offset[dim] = index * base + std::min(index, extra);
  b.extent[dim] = base + (index < extra ? 1 : 0);
  return b;
}

std::optional<Box> intersect(const Box& a, const Box& b) {
  if (a.offset.size() != b.offset.size()) return std::nullopt;
  Box out{std::vector<std::int64_t>(a.offset.size()), std::vector<std::int64_t>(a.offset.size())};
  for (std::size_t d = 0; d < a.offset.size(); ++d) {
    const std::int64_t lo = std::max(a.offset[d], b.offset[d]);
    const std::int64_t hi = std::min(a.offset[d] + a.extent[d], b.offset[d] + b.extent[d]);
    if (hi <= lo) return std::nullopt;
    out.offset[d] = lo;
    out.extent[d] = hi - lo;
  }
  return out;
}

bool inside(std::span<const std::int64_t> global_shape, const Box& box) {
  if (box.offset.size() != global_shape.size() || box.extent.size() != global_shape.size()) return false;
  for (std::size_t d = 0; d < global_shape.size(); ++d) {
    if (box.offset[d] < 0 || box.extent[d] < 0 || box.offset[d] > global_shape[d] ||
        box.extent[d] > global_shape[d] - box.offset[d]) {
      return false;
    }
  }
  return true;
}

std::string describe(const Box& box) {
  std::string s = "[";
  for (std::size_t d = 0; d < box.offset.size(); ++d) {
    if (d > 0) s += ", ";
    s += std::to_string(box.offset[d]) + ":" + std::to_string(box.offset[d] + box.extent[d]);
  }
  return s + "]";
}

namespace {

std::string shape_text(std::span<const std::int64_t> shape) {
  std::string s = "[";
  for (std::size_t d = 0; d < shape.size(); ++d) s += (d > 0 ? "," : "") + std::to_string(shape[d]);
  return s + "]";
}

// An element no box covers: the boundaries of every box cut each dimension into intervals; the
// grid of their products has a cell outside every box exactly when the boxes leave a gap, and
// its first corner is such an element. (Called only after the volumes showed a gap.)
std::optional<std::vector<std::int64_t>> uncovered(std::span<const std::int64_t> shape, std::span<const Box> boxes) {
  const std::size_t rank = shape.size();
  std::vector<std::vector<std::int64_t>> cuts(rank);
  for (std::size_t d = 0; d < rank; ++d) {
    cuts[d] = {0, shape[d]};
    for (const auto& b : boxes) {
      cuts[d].push_back(b.offset[d]);
      cuts[d].push_back(b.offset[d] + b.extent[d]);
    }
    std::sort(cuts[d].begin(), cuts[d].end());
    cuts[d].erase(std::unique(cuts[d].begin(), cuts[d].end()), cuts[d].end());
  }
  std::vector<std::size_t> at(rank, 0);
  // At most 2^22 box tests in all: an input from the wire cannot make this loop long (no element
  // named then; the volumes already showed the gap).
  const std::uint64_t cells = (std::uint64_t{1} << 22) / std::max<std::uint64_t>(boxes.size(), 1);
  for (std::uint64_t tried = 0; tried < cells; ++tried) {
    std::vector<std::int64_t> point(rank);
    for (std::size_t d = 0; d < rank; ++d) point[d] = cuts[d][at[d]];
    const bool covered = std::any_of(boxes.begin(), boxes.end(), [&](const Box& b) {
      for (std::size_t d = 0; d < rank; ++d) {
        if (point[d] < b.offset[d] || point[d] >= b.offset[d] + b.extent[d]) return false;
      }
      return true;
    });
    if (!covered) return point;
    std::size_t d = rank;
    while (d > 0) {  // next cell, last dimension fastest; each index stops before the last cut
      --d;
      if (++at[d] + 1 < cuts[d].size()) break;
      at[d] = 0;
      if (d == 0) return std::nullopt;
    }
    if (rank == 0) return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace

void check_tiling(std::string_view global_name, std::span<const std::int64_t> global_shape, std::span<const Box> boxes,
                  std::span<const std::string> owners) {
  const std::string what = "global tensor '" + std::string(global_name) + "' " + shape_text(global_shape);
  auto owner = [&](std::size_t i) { return i < owners.size() ? "'" + owners[i] + "'" : "box " + std::to_string(i); };
  std::uint64_t covered = 0;
  for (std::size_t i = 0; i < boxes.size(); ++i) {
    if (!inside(global_shape, boxes[i])) {
      throw UserError(what + ": " + owner(i) + " holds " + describe(boxes[i]) + ", outside the tensor");
    }
    covered += volume(boxes[i]);
  }
  // Overlaps: sorted by their first offset, a box can only meet the ones that start before it ends.
  std::vector<std::size_t> order(boxes.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(),
            [&](std::size_t a, std::size_t b) { return boxes[a].offset < boxes[b].offset; });
  for (std::size_t x = 0; x < order.size(); ++x) {
    const Box& a = boxes[order[x]];
    for (std::size_t y = x + 1; y < order.size(); ++y) {
      const Box& b = boxes[order[y]];
      if (!a.offset.empty() && b.offset[0] >= a.offset[0] + a.extent[0]) break;
      if (const auto common = intersect(a, b); common && volume(*common) > 0) {
        throw UserError(what + ": " + owner(order[x]) + " " + describe(a) + " and " + owner(order[y]) + " " +
                        describe(b) + " overlap in " + describe(*common));
      }
    }
  }
  const std::uint64_t total =
      volume(Box{std::vector<std::int64_t>(global_shape.size(), 0), {global_shape.begin(), global_shape.end()}});
  if (covered != total) {
    std::string where;
    if (const auto p = uncovered(global_shape, boxes)) where = "; element " + shape_text(*p) + " is in none";
    throw UserError(what + ": its " + std::to_string(boxes.size()) + " boxes cover " + std::to_string(covered) +
                    " of " + std::to_string(total) + " elements" + where);
  }
}

}  // namespace tensorhub
