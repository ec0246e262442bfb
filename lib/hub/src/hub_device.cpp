#include "hub_device.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "tensorhub/core/checksum.hpp"
#include "tensorhub/core/error.hpp"
#include "tensorhub/device/device.hpp"

namespace tensorhub {

HubDevice::HubDevice(std::shared_ptr<device::Device> made, std::string which)
    : device_(std::move(made)), which_(std::move(which)) {}

HubDevice::~HubDevice() = default;

void* HubDevice::allocate(std::uint64_t bytes) {
  auto buf = std::make_unique<device::Buffer>(get().allocate(bytes));
  void* p = buf->get();
  const std::lock_guard lock(mu_);
  owned_[p] = std::move(buf);
  return p;
}

std::optional<std::uint64_t> HubDevice::allocation_size(void* p) const {
  const std::lock_guard lock(mu_);
  const auto it = owned_.find(p);
  if (it == owned_.end()) return std::nullopt;
  return it->second->size();
}

void HubDevice::free(void* p) {
  const std::lock_guard lock(mu_);
  if (owned_.erase(p) == 0) throw UserError("deallocate: this device memory was not allocated by allocate_device");
}

void HubDevice::copy(void* dst, MemoryKind dst_memory, const void* src, MemoryKind src_memory, std::uint64_t bytes) {
  if (dst_memory == MemoryKind::kHost && src_memory == MemoryKind::kHost) {
    std::memmove(dst, src, bytes);
    return;
  }
  auto& dev = get();
  auto stream = dev.create_stream();
  const auto kind = src_memory == MemoryKind::kHost   ? device::CopyKind::kHostToDevice
                    : dst_memory == MemoryKind::kCuda ? device::CopyKind::kDeviceToDevice
                                                      : device::CopyKind::kDeviceToHost;
  dev.copy_async(dst, src, bytes, kind, stream);
  stream.synchronize();
}

device::Device& HubDevice::get() {
  const std::lock_guard lock(mu_);
  if (!device_) device_ = which_.empty() ? device::make_device_from_env() : device::make_device(which_);
  return *device_;
}

device::Device* HubDevice::made() const {
  const std::lock_guard lock(mu_);
  return device_.get();
}

void HubDevice::check_tensor(const Tensor& t, const char* what) {
  auto& dev = get();
  const auto info = dev.query(t.data);
  const auto n = t.spec.bytes();
  if (!info.is_device) {
    throw UserError(std::string(what) + ": tensor '" + t.spec.name + "' is marked cuda memory but is not memory of " +
                    dev.describe());
  }
  const auto base = reinterpret_cast<std::uintptr_t>(info.base);
  const auto at = reinterpret_cast<std::uintptr_t>(t.data);
  if (at < base || at - base > info.size || n > info.size - (at - base)) {
    throw UserError(std::string(what) + ": tensor '" + t.spec.name + "' (" + std::to_string(n) +
                    " bytes) runs past the end of its device allocation (" + std::to_string(info.size) + " bytes)");
  }
}

void HubDevice::hash_device_tensors(std::span<const Tensor> tensors, std::uint64_t chunk_bytes, ShardManifest& shard) {
  if (!any_device_memory(tensors)) return;
  if (shard.checksum_algorithm != ChecksumAlgorithm::kXxh3_64) {
    throw UserError("publish of device memory needs xxh3_64 checksums (the device computes only those), not " +
                    std::string(checksum_algorithm_name(shard.checksum_algorithm)));
  }
  auto& dev = get();
  auto stream = dev.create_stream();
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    if (tensors[i].memory != MemoryKind::kCuda) continue;
    auto sums = dev.xxh3_64_chunks(tensors[i].data, tensors[i].spec.bytes(), chunk_bytes, stream);
    require(sums.size() == shard.checksums[i].size(), "one device checksum per chunk");
    shard.checksums[i] = std::move(sums);
  }
}

std::string HubDevice::describe() {
  auto& dev = get();
  if (dev.kind() == device::BackendKind::kEmulated) {
    return "emulated device (no GPU: CPU memory behind the emulator; figures are not GPU figures)";
  }
  return dev.describe();
}

bool any_device_memory(std::span<const Tensor> tensors) {
  return std::any_of(tensors.begin(), tensors.end(), [](const Tensor& t) { return t.memory == MemoryKind::kCuda; });
}

}  // namespace tensorhub
