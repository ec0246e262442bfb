// Checks a region descriptor a reader received for an mpi_rma holder before MPI_Rget sees it
// (issue 16, descriptor safety): an out-of-range rank or displacement would otherwise be an
// MPI error on the window, fatal to the process. A bad one throws TransportError, so that read
// fails and is reassigned. No MPI here (unit-tested without MPI_Init).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "tensorhub/transport/descriptor.hpp"

namespace tensorhub::transport {

// `pool_bytes[r]`: the pool rank r registered (gathered at construction; 0 = a dynamic window,
// whose attached spans the reader cannot know, so only arithmetic is checked). Reading
// [offset, offset + length) of `region` at rank `target`: returns the window displacement.
std::uint64_t checked_displacement(const Region& region, std::uint64_t offset, std::uint64_t length, int target,
                                   std::span<const std::uint64_t> pool_bytes, std::string_view endpoint);

}  // namespace tensorhub::transport
