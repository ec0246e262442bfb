// expose() of the ucx backend: registers memory with ucp_mem_map and describes it for readers.
#pragma once

#include <memory>
#include <span>

#include "core.hpp"
#include "tensorhub/transport/transport.hpp"

namespace tensorhub::transport::ucx {

// Ranges that overlap or touch share one registration (one ucp_mem_map, one remote key): a
// version's tensors carved from one arena cost one. Takes core->mutex. Throws UserError for CUDA
// memory on a UCX built without CUDA, TransportError when registration fails.
std::unique_ptr<Exposure> expose_ranges(const std::shared_ptr<Core>& core, std::span<const MemoryRange> ranges);

}  // namespace tensorhub::transport::ucx
