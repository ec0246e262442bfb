// RAII for ucp_context_h: UCP with the RMA and wake-up features, configured from UCX_* variables.
#pragma once

#include <ucp/api/ucp.h>

#include <cstdint>

namespace tensorhub::transport::ucx {

class Context {
 public:
  Context();
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  ucp_context_h get() const { return context_; }
  // Can this UCX build register memory of `type` (e.g. UCS_MEMORY_TYPE_CUDA needs a CUDA build)?
  bool supports(ucs_memory_type_t type) const;

 private:
  ucp_context_h context_ = nullptr;
  std::uint64_t memory_types_ = 0;
};

}  // namespace tensorhub::transport::ucx
