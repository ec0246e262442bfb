// RAII for the result of a ucp_*_nbx call: completed at once (NULL), failed at once (an error
// pointer) or a request polled with status(). The destructor frees the request; freeing one that
// is still in progress abandons it (UCX releases it when it ends).
#pragma once

#include <ucp/api/ucp.h>

#include <chrono>

#include "worker.hpp"

namespace tensorhub::transport::ucx {

class Request {
 public:
  explicit Request(ucs_status_ptr_t result);
  ~Request();
  Request(Request&& other) noexcept;
  Request& operator=(Request&& other) noexcept;
  Request(const Request&) = delete;
  Request& operator=(const Request&) = delete;

  // UCS_INPROGRESS while running, then UCS_OK or the error it ended with.
  ucs_status_t status() const;

 private:
  void* request_ = nullptr;
  ucs_status_t immediate_ = UCS_OK;
};

// Progresses `worker` until `request` ends or `limit` passes; returns its status (UCS_INPROGRESS
// on timeout).
ucs_status_t wait(Worker& worker, const Request& request, std::chrono::milliseconds limit);

}  // namespace tensorhub::transport::ucx
