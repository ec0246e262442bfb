#include "context.hpp"

#include <memory>

#include "status.hpp"
#include "tcp_segments.hpp"

namespace tensorhub::transport::ucx {

Context::Context() {
  ucp_config_t* raw_config = nullptr;
  check(ucp_config_read(nullptr, nullptr, &raw_config), "ucp_config_read");
  const std::unique_ptr<ucp_config_t, decltype(&ucp_config_release)> config(raw_config, &ucp_config_release);
  apply_tcp_segment_defaults(config.get());  // one-fragment read replies over TCP (tcp_segments.hpp)
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED;
  // WAKEUP: the progress thread sleeps on the worker's event fd instead of spinning. AM: reads
  // served by active messages where UCX would emulate gets (am_server.hpp).
  params.features = UCP_FEATURE_RMA | UCP_FEATURE_AM | UCP_FEATURE_WAKEUP;
  params.mt_workers_shared = 0;  // one worker per context; UcxTransport serialises calls itself
  check(ucp_init(&params, config.get(), &context_), "ucp_init");
  ucp_context_attr_t attr{};
  attr.field_mask = UCP_ATTR_FIELD_MEMORY_TYPES;
  const ucs_status_t s = ucp_context_query(context_, &attr);
  if (s != UCS_OK) {
    ucp_cleanup(context_);
    fail(s, "ucp_context_query");
  }
  memory_types_ = attr.memory_types;
}

Context::~Context() { ucp_cleanup(context_); }

bool Context::supports(ucs_memory_type_t type) const { return (memory_types_ & UCS_BIT(type)) != 0; }

}  // namespace tensorhub::transport::ucx
