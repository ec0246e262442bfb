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

// For the paths that cannot scatter a read (Transport::can_scatter false).
inline void require_contiguous(const ReadOp& op, std::string_view path) {
  if (!op.pieces.empty()) {
    throw TransportError(std::string(path) + ": cannot scatter a read into " + std::to_string(op.pieces.size()) +
                         " pieces (contiguous destinations only)");
  }
}

// Checks a scattered read's pieces before any byte is written: they cover exactly the read.
inline void require_pieces_cover(const ReadOp& op, std::string_view path) {
  std::uint64_t sum = 0;
  for (const auto& p : op.pieces) {
    if (p.length > op.length - sum) break;
    sum += p.length;
  }
  if (sum != op.length) {
    throw ContractViolation(std::string(path) + ": the pieces of a scattered read do not add up to its " +
                            std::to_string(op.length) + " bytes");
  }
}

}  // namespace tensorhub::transport
