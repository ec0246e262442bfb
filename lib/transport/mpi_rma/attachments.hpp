// The memory attached to the mpi_rma transport's dynamic window (pool_bytes == 0): one
// MPI_Win_attach per span, shared (reference counted) by every exposure that lies inside it.
// Open MPI limits how many regions a dynamic window may have attached (osc ucx 32, osc rdma 64),
// hence `max_attach` and the coalescing of neighbouring ranges (src/coalesce.hpp). Used from the
// transport's one thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>

#include "tensorhub/mpi/window.hpp"

namespace tensorhub::transport {

class Attachments {
 public:
  explicit Attachments(std::size_t max_attach) : max_attach_(max_attach) {}

  // Attaches [begin, end) to `window`, or reuses an attachment that contains it; returns its
  // key for detach(). Throws UserError for a partial overlap or past max_attach.
  std::uint64_t attach(const mpi::Window& window, std::uint64_t begin, std::uint64_t end);
  void detach(std::uint64_t key) noexcept;
  // Detaches everything (before the window goes).
  void clear() noexcept { attached_.clear(); }

 private:
  struct Attached {
    std::uint64_t end = 0;
    std::uint32_t refs = 0;
    std::unique_ptr<mpi::Attachment> attachment;
  };
  std::size_t max_attach_;
  std::map<std::uint64_t, Attached> attached_;  // by begin address
};

}  // namespace tensorhub::transport
