// The one device of a hub (private header): made at join when asked (HubOptions::device or
// TENSORHUB_DEVICE; then the data paths get it too, make_transport), else on the first tensor
// in device memory (MemoryKind::kCuda) with make_device("auto"). Publish hashes device tensors
// on it, pull lands and verifies device chunks on it; nothing in the hub reads device bytes on
// the host (the emulated backend crashes if it did).
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "tensorhub/core/manifest.hpp"
#include "tensorhub/core/tensor.hpp"

namespace tensorhub::device {
class Device;  // tensorhub/device/device.hpp
class Buffer;
}  // namespace tensorhub::device

namespace tensorhub {

class HubDevice {
 public:
  // `made`: the device made at join (may be null; tests share one among in-process hubs);
  // `which`: what to make on first use
  // ("auto", "cuda", "emulated"; "" = make_device_from_env).
  HubDevice(std::shared_ptr<device::Device> made, std::string which);
  ~HubDevice();  // frees what allocate() gave, then (last owner) the device
  HubDevice(const HubDevice&) = delete;
  HubDevice& operator=(const HubDevice&) = delete;

  // The device, made on first use. Thread-safe.
  device::Device& get();
  // The device if made, else null.
  device::Device* made() const;
  // UserError unless `t` (a kCuda tensor) is device memory of this device whose first
  // t.spec.bytes() lie in one allocation; `what` names the call.
  void check_tensor(const Tensor& t, const char* what);
  // Fills `shard`'s checksums of the kCuda tensors among `tensors` (its layout, same order) with
  // XXH3-64 per chunk computed on the device. UserError unless `shard` uses XXH3-64.
  void hash_device_tensors(std::span<const Tensor> tensors, std::uint64_t chunk_bytes, ShardManifest& shard);
  // Device memory owned here until free() / destruction (Hub::allocate_device).
  void* allocate(std::uint64_t bytes);
  // Its size if `p` came from allocate() and is not freed yet.
  std::optional<std::uint64_t> allocation_size(void* p) const;
  void free(void* p);
  // Synchronous copy between host and device memory (Hub::copy_memory).
  void copy(void* dst, MemoryKind dst_memory, const void* src, MemoryKind src_memory, std::uint64_t bytes);
  // "emulated (no GPU: device memory is CPU memory behind the emulator)" or the cuda describe().
  std::string describe();

 private:
  mutable std::mutex mu_;
  std::shared_ptr<device::Device> device_;
  std::string which_;
  std::map<void*, std::unique_ptr<device::Buffer>> owned_;  // after device_: freed first
};

// Whether any of `tensors` is device memory.
bool any_device_memory(std::span<const Tensor> tensors);

}  // namespace tensorhub
