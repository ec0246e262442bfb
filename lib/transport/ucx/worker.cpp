#include "worker.hpp"

#include <cstring>

#include "status.hpp"

namespace tensorhub::transport::ucx {

Worker::Worker(const Context& context) {
  ucp_worker_params_t params{};
  params.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  params.thread_mode = UCS_THREAD_MODE_SERIALIZED;
  check(ucp_worker_create(context.get(), &params, &worker_), "ucp_worker_create");
  if (ucp_worker_get_efd(worker_, &event_fd_) != UCS_OK) event_fd_ = -1;
}

Worker::~Worker() { ucp_worker_destroy(worker_); }

std::vector<std::byte> Worker::address() const {
  ucp_address_t* address = nullptr;
  std::size_t length = 0;
  check(ucp_worker_get_address(worker_, &address, &length), "ucp_worker_get_address");
  std::vector<std::byte> out(length);
  std::memcpy(out.data(), address, length);
  ucp_worker_release_address(worker_, address);
  return out;
}

ucs_status_t Worker::arm() { return event_fd_ < 0 ? UCS_ERR_UNSUPPORTED : ucp_worker_arm(worker_); }

void Worker::signal() {
  // Only fails on a broken worker; the progress thread also wakes on its poll timeout.
  (void)ucp_worker_signal(worker_);
}

}  // namespace tensorhub::transport::ucx
