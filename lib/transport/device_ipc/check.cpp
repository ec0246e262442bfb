#include <exception>

#include "tensorhub/device/device.hpp"
#include "tensorhub/transport/device_ipc_check.hpp"

namespace tensorhub::transport {

DeviceIpcCheck check_device_ipc() {
  DeviceIpcCheck c;
  try {
    const auto device = device::make_device_from_env();
    c.ok = true;
    c.backend = std::string(device::to_string(device->kind()));
    c.detail = device->describe();
    if (device->kind() == device::BackendKind::kEmulated) {
      c.detail += device::cuda_backend_built() ? "; no CUDA device visible" : "; this build has no cuda backend";
    }
  } catch (const std::exception& e) {
    c.detail = e.what();
  }
  return c;
}

}  // namespace tensorhub::transport
