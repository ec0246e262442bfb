// RAII for ucp_ep_h: an endpoint to one peer's worker with peer error handling, so a dead peer
// ends its requests with an error and calls `on_error` (from ucp_worker_progress) instead of
// hanging them. Closing is always forced: requests still running end with UCS_ERR_CANCELED.
#pragma once

#include <ucp/api/ucp.h>

#include <chrono>
#include <cstddef>
#include <span>
#include <string>
#include <string_view>

#include "worker.hpp"

namespace tensorhub::transport::ucx {

class Endpoint {
 public:
  Endpoint(Worker& worker, std::span<const std::byte> peer_address, std::string_view peer_name,
           ucp_err_handler_cb_t on_error, void* on_error_arg);
  ~Endpoint();  // close(kCloseLimit)
  Endpoint(const Endpoint&) = delete;
  Endpoint& operator=(const Endpoint&) = delete;

  ucp_ep_h get() const { return ep_; }
  bool open() const { return ep_ != nullptr; }
  // Force-close, progressing the worker until UCX has released the endpoint (at most `limit`).
  // Idempotent; never throws.
  void close(std::chrono::milliseconds limit) noexcept;

  static constexpr std::chrono::milliseconds kCloseLimit{1000};

 private:
  Worker& worker_;
  ucp_ep_h ep_ = nullptr;
};

}  // namespace tensorhub::transport::ucx
