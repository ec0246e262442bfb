// RAII for ucp_worker_h. Thread mode SERIALIZED: UcxTransport calls the worker from its caller's
// thread and from its progress thread, never at once (it holds one mutex around every UCX call).
#pragma once

#include <ucp/api/ucp.h>

#include <cstddef>
#include <vector>

#include "context.hpp"

namespace tensorhub::transport::ucx {

class Worker {
 public:
  explicit Worker(const Context& context);
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  ucp_worker_h get() const { return worker_; }
  // The address peers pass to ucp_ep_create (packed, opaque).
  std::vector<std::byte> address() const;
  // One ucp_worker_progress; returns how many events it handled.
  unsigned progress() { return ucp_worker_progress(worker_); }

  // Wake-up: the fd becomes readable when the worker has events, once arm() returned true.
  // -1 when the worker's transports cannot signal (then poll on a timer).
  int event_fd() const { return event_fd_; }
  // UCS_OK: armed, wait on event_fd(); UCS_ERR_BUSY: events pending, progress again first;
  // anything else (UCS_ERR_UNSUPPORTED without an event fd): poll on a timer instead.
  ucs_status_t arm();
  // Makes event_fd() readable; safe from any thread.
  void signal();
  // Installs `cb` (with `arg`) as the handler of active messages `id`, whole messages only;
  // throws TransportError naming `what`. clear_am_handler removes it (never throws).
  void set_am_handler(unsigned id, ucp_am_recv_callback_t cb, void* arg, const char* what);
  void clear_am_handler(unsigned id) noexcept;

 private:
  ucp_worker_h worker_ = nullptr;
  int event_fd_ = -1;
};

}  // namespace tensorhub::transport::ucx
