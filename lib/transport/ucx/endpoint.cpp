#include "endpoint.hpp"

#include "request.hpp"
#include "status.hpp"

namespace tensorhub::transport::ucx {

Endpoint::Endpoint(Worker& worker, std::span<const std::byte> peer_address, std::string_view peer_name,
                   ucp_err_handler_cb_t on_error, void* on_error_arg)
    : worker_(worker) {
  ucp_ep_params_t params{};
  params.field_mask =
      UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE | UCP_EP_PARAM_FIELD_ERR_HANDLER;
  params.address = reinterpret_cast<const ucp_address_t*>(peer_address.data());
  // PEER: failures of the remote process are reported (as errors, within ~0.1 s over TCP) instead
  // of hanging requests. UCX 1.13 then uses no shared-memory transport (they cannot report it).
  params.err_mode = UCP_ERR_HANDLING_MODE_PEER;
  params.err_handler.cb = on_error;
  params.err_handler.arg = on_error_arg;
  check(ucp_ep_create(worker_.get(), &params, &ep_), "ucp_ep_create", "peer " + std::string(peer_name));
}

Endpoint::~Endpoint() { close(kCloseLimit); }

void Endpoint::close(std::chrono::milliseconds limit) noexcept {
  if (ep_ == nullptr) return;
  ucp_request_param_t params{};
  params.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  params.flags = UCP_EP_CLOSE_FLAG_FORCE;
  const Request request(ucp_ep_close_nbx(ep_, &params));
  ep_ = nullptr;
  // A forced close completes locally (no reply from the peer is awaited): the limit only guards
  // against a UCX bug; past it the request is abandoned, never waited for.
  (void)wait(worker_, request, limit);
}

}  // namespace tensorhub::transport::ucx
