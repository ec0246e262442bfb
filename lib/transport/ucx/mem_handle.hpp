// RAII for ucp_mem_h: memory registered (ucp_mem_map) with a context, readable by peers that hold
// its packed remote key. The context must outlive the handle.
#pragma once

#include <ucp/api/ucp.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "context.hpp"

namespace tensorhub::transport::ucx {

class MemHandle {
 public:
  MemHandle(const Context& context, void* base, std::uint64_t bytes, ucs_memory_type_t type);
  ~MemHandle();
  MemHandle(const MemHandle&) = delete;
  MemHandle& operator=(const MemHandle&) = delete;

  std::vector<std::byte> packed_rkey() const;

 private:
  ucp_context_h context_;
  ucp_mem_h memh_ = nullptr;
};

}  // namespace tensorhub::transport::ucx
