// Which paths beyond device_ipc can carry device memory here? For `tensorhub probe`: the staged
// path (starts a staging server on the device TENSORHUB_DEVICE selects and says where it
// listens) and whether this UCX is CUDA-aware (a ucx transport asked at run time). Never throws.
#pragma once

#include <string>

namespace tensorhub::transport {

struct DevicePathsCheck {
  bool staged_ok = false;
  std::string staged;  // where the staging server listens and its ring, or why it cannot start
  bool ucx_built = false;
  bool ucx_cuda_aware = false;
  std::string ucx;  // what UCX said, or why no ucx transport could be made
};

DevicePathsCheck check_device_paths();

}  // namespace tensorhub::transport
