// For the paths that can write only host memory (local, cma, mpi_rma, ucx without CUDA): a read
// posted with a device destination is refused before any byte is written, so a routing bug can
// never make the host write device memory (transport.hpp: ReadOp::dst_memory).
#pragma once

#include <string>
#include <string_view>

#include "tensorhub/core/error.hpp"
#include "tensorhub/transport/transport.hpp"

namespace tensorhub::transport {

inline void require_host_destination(const ReadOp& op, std::string_view path) {
  if (op.dst_memory != MemoryKind::kHost) {
    throw TransportError(std::string(path) + ": cannot read into " + std::string(memory_kind_name(op.dst_memory)) +
                         " memory (host memory only; device destinations need the device_ipc path)");
  }
}

}  // namespace tensorhub::transport
