// Pull destinations that name a box of a global tensor (resharding; share/doc/architecture.md
// "Global tensors"). A destination whose TensorSpec is sliced (global_name, global_shape,
// box_offset; host_slice) asks for that box of the global tensor; a plain destination named after
// a global tensor of the version (a name no tensor of it has) asks for all of it, as a full
// tensor. A plain tensor of the version is a global tensor of one box. The box is filled from
// every published box that meets it: nothing is gathered anywhere.
#pragma once

#include <optional>
#include <vector>

#include "tensorhub/core/manifest.hpp"
#include "tensorhub/transfer/pull_engine.hpp"

namespace tensorhub {

// nullopt when `t` is a plain destination of a tensor of `m` (matched by name), or names nothing
// of `m` at all (the caller's NotFoundError). Otherwise the engine destinations that fill it, one
// per published tensor whose box meets `t`'s; a destination that is exactly one published tensor
// has no runs (read and relayed like that tensor). UserError for a dtype, global shape or box that
// does not fit the global tensor, or a buffer too small; NotFoundError for a sliced destination
// whose global tensor `m` does not have.
std::optional<std::vector<transfer::Destination>> box_destinations(const Manifest& m, const Tensor& t);

}  // namespace tensorhub
