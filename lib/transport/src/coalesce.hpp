// Groups memory ranges into few spans (MPI_Win_attach, UCX registrations): Open MPI limits how many regions a
// dynamic window may have attached (osc ucx: 32, osc rdma: osc_rdma_max_attach = 64), and a
// model has hundreds of tensors. Ranges that overlap or lie within `max_gap` bytes of each other
// (tensors carved from one arena, or consecutive allocations) share one attachment.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace tensorhub::transport {

struct Span {
  std::uint64_t begin = 0;
  std::uint64_t end = 0;  // exclusive
};

// Returns the merged spans, sorted by address; every input [begin, begin+bytes) lies inside one.
std::vector<Span> coalesce(std::span<const Span> ranges, std::uint64_t max_gap);

}  // namespace tensorhub::transport
