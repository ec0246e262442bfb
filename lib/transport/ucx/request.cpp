#include "request.hpp"

#include <utility>

namespace tensorhub::transport::ucx {

Request::Request(ucs_status_ptr_t result) {
  if (UCS_PTR_IS_ERR(result)) {
    immediate_ = UCS_PTR_STATUS(result);
  } else if (result != nullptr) {
    request_ = result;
  }
}

Request::~Request() {
  if (request_ != nullptr) ucp_request_free(request_);
}

Request::Request(Request&& other) noexcept
    : request_(std::exchange(other.request_, nullptr)), immediate_(other.immediate_) {}

Request& Request::operator=(Request&& other) noexcept {
  if (this != &other) {
    if (request_ != nullptr) ucp_request_free(request_);
    request_ = std::exchange(other.request_, nullptr);
    immediate_ = other.immediate_;
  }
  return *this;
}

ucs_status_t Request::status() const { return request_ != nullptr ? ucp_request_check_status(request_) : immediate_; }

ucs_status_t wait(Worker& worker, const Request& request, std::chrono::milliseconds limit) {
  const auto end = std::chrono::steady_clock::now() + limit;
  for (;;) {
    const ucs_status_t s = request.status();
    if (s != UCS_INPROGRESS || std::chrono::steady_clock::now() > end) return s;
    worker.progress();
  }
}

}  // namespace tensorhub::transport::ucx
