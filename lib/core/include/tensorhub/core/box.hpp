// Boxes: the part of a global tensor one published tensor holds (resharding: a trainer's FSDP /
// tensor-parallel shards declare the box of the global tensor each holds; share/doc/architecture.md
// "Global tensors"). A box is an offset and an extent per dimension, row-major like the tensors.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tensorhub {

struct Box {
  std::vector<std::int64_t> offset;
  std::vector<std::int64_t> extent;
  bool operator==(const Box&) const = default;
};

// Elements in the box (0 for an empty extent). Throws UserError if it does not fit in 64 bits.
std::uint64_t volume(const Box& box);

// The box of part `index` of `parts` when `global_shape` is cut along `dim` as evenly as
// possible (the first global_shape[dim] % parts parts are one larger; what torch.tensor_split and
// Megatron's uneven splits do). Throws UserError for dim out of range, parts < 1 or index out of
// range.
Box split(std::span<const std::int64_t> global_shape, std::size_t dim, std::int64_t parts, std::int64_t index);

// The common part of two boxes of the same rank; nullopt when they do not meet.
std::optional<Box> intersect(const Box& a, const Box& b);

// Whether `box` has the rank of `global_shape`, non-negative offsets and extents and lies inside.
bool inside(std::span<const std::int64_t> global_shape, const Box& box);

// "[0:2048, 0:4096]"
std::string describe(const Box& box);

// Checks that `boxes` (held by the tensors named in `owners`, same order) tile `global_shape`
// exactly: each inside, no two overlapping, no element uncovered. Throws UserError naming the
// global tensor and the two boxes that overlap, or an element no box covers.
void check_tiling(std::string_view global_name, std::span<const std::int64_t> global_shape, std::span<const Box> boxes,
                  std::span<const std::string> owners);

}  // namespace tensorhub
