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

void Worker::set_am_handler(unsigned id, ucp_am_recv_callback_t cb, void* arg, const char* what) {
  ucp_am_handler_param_t p{};
  p.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_FLAGS | UCP_AM_HANDLER_PARAM_FIELD_CB |
                 UCP_AM_HANDLER_PARAM_FIELD_ARG;
  p.id = id;
  p.flags = UCP_AM_FLAG_WHOLE_MSG;
  p.cb = cb;
  p.arg = arg;
  check(ucp_worker_set_am_recv_handler(worker_, &p), "ucp_worker_set_am_recv_handler", what);
}

void Worker::clear_am_handler(unsigned id) noexcept {
  ucp_am_handler_param_t p{};
  p.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB;
  p.id = id;
  p.cb = nullptr;
  (void)ucp_worker_set_am_recv_handler(worker_, &p);
}

void Worker::signal() {
  // Only fails on a broken worker; the progress thread also wakes on its poll timeout.
  (void)ucp_worker_signal(worker_);
}

}  // namespace tensorhub::transport::ucx
