// Can this process use the `device_ipc` transport (same-host device memory through lib/device
// IPC handles, lib/transport/device_ipc)? For `tensorhub probe`: creates the device that
// TENSORHUB_DEVICE selects (auto: cuda when a GPU is visible, else the CPU emulation) and says
// which backend serves device IPC. Never throws.
#pragma once

#include <string>

namespace tensorhub::transport {

struct DeviceIpcCheck {
  bool ok = false;
  std::string backend;  // "cuda" or "emulated" when ok
  std::string detail;   // the device (describe()), or why there is none
};

DeviceIpcCheck check_device_ipc();

}  // namespace tensorhub::transport
