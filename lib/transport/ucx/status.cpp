#include "status.hpp"

#include "tensorhub/core/error.hpp"

namespace tensorhub::transport::ucx {

std::string describe(ucs_status_t status) {
  return std::string(ucs_status_string(status)) + " (UCS " + std::to_string(static_cast<int>(status)) + ")";
}

void fail(ucs_status_t status, std::string_view call, std::string_view context) {
  std::string what = "ucx: " + std::string(call);
  if (!context.empty()) what += " for " + std::string(context);
  throw TransportError(what + " failed: " + describe(status));
}

}  // namespace tensorhub::transport::ucx
