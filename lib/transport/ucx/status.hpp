// ucs_status_t -> TransportError, with the call that failed and the peer it concerned.
#pragma once

#include <ucs/type/status.h>

#include <string>
#include <string_view>

namespace tensorhub::transport::ucx {

// "Endpoint timeout (UCS -80)"
std::string describe(ucs_status_t status);

// Throws TransportError "ucx: <call> [for <context>] failed: <describe(status)>".
[[noreturn]] void fail(ucs_status_t status, std::string_view call, std::string_view context = {});

inline void check(ucs_status_t status, std::string_view call, std::string_view context = {}) {
  if (status != UCS_OK) fail(status, call, context);
}

}  // namespace tensorhub::transport::ucx
