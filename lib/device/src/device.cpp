#include "tensorhub/device/device.hpp"

#include <cstdlib>
#include <utility>

#include "cuda_device.hpp"
#include "tensorhub/core/error.hpp"
#include "tensorhub/device/emulated.hpp"

namespace tensorhub::device {

std::string_view to_string(BackendKind kind) {
  switch (kind) {
    case BackendKind::kEmulated:
      return "emulated";
    case BackendKind::kCuda:
      return "cuda";
  }
  return "unknown";
}

Buffer::Buffer(Buffer&& o) noexcept
    : device_(std::exchange(o.device_, nullptr)),
      ptr_(std::exchange(o.ptr_, nullptr)),
      size_(std::exchange(o.size_, 0)) {}
Buffer& Buffer::operator=(Buffer&& o) noexcept {
  if (this != &o) {
    reset();
    device_ = std::exchange(o.device_, nullptr);
    ptr_ = std::exchange(o.ptr_, nullptr);
    size_ = std::exchange(o.size_, 0);
  }
  return *this;
}
Buffer::~Buffer() { reset(); }
void Buffer::reset() noexcept {
  if (ptr_ != nullptr) device_->do_free(ptr_);
  ptr_ = nullptr;
}

HostBuffer::HostBuffer(HostBuffer&& o) noexcept
    : device_(std::exchange(o.device_, nullptr)),
      ptr_(std::exchange(o.ptr_, nullptr)),
      size_(std::exchange(o.size_, 0)) {}
HostBuffer& HostBuffer::operator=(HostBuffer&& o) noexcept {
  if (this != &o) {
    reset();
    device_ = std::exchange(o.device_, nullptr);
    ptr_ = std::exchange(o.ptr_, nullptr);
    size_ = std::exchange(o.size_, 0);
  }
  return *this;
}
HostBuffer::~HostBuffer() { reset(); }
void HostBuffer::reset() noexcept {
  if (ptr_ != nullptr) device_->do_free_host(ptr_, size_);
  ptr_ = nullptr;
}

IpcMapping::IpcMapping(IpcMapping&& o) noexcept
    : device_(std::exchange(o.device_, nullptr)),
      base_(std::exchange(o.base_, nullptr)),
      size_(std::exchange(o.size_, 0)),
      offset_(std::exchange(o.offset_, 0)) {}
IpcMapping& IpcMapping::operator=(IpcMapping&& o) noexcept {
  if (this != &o) {
    reset();
    device_ = std::exchange(o.device_, nullptr);
    base_ = std::exchange(o.base_, nullptr);
    size_ = std::exchange(o.size_, 0);
    offset_ = std::exchange(o.offset_, 0);
  }
  return *this;
}
IpcMapping::~IpcMapping() { reset(); }
void IpcMapping::reset() noexcept {
  if (base_ != nullptr) device_->do_close_import(base_);
  base_ = nullptr;
}

Buffer Device::allocate(std::size_t bytes) {
  if (bytes == 0) throw UserError("device allocate: 0 bytes");
  return Buffer(this, do_allocate(bytes), bytes);
}

HostBuffer Device::allocate_host(std::size_t bytes) {
  if (bytes == 0) throw UserError("device allocate_host: 0 bytes");
  return HostBuffer(this, do_allocate_host(bytes), bytes);
}

IpcMapping Device::import_ipc(const IpcHandle& handle) {
  if (handle.backend != kind()) {
    throw UserError("device import_ipc: a " + std::string(to_string(handle.backend)) + " handle on a " +
                    std::string(to_string(kind())) + " device");
  }
  if (handle.size == 0 || handle.offset >= handle.size) throw UserError("device import_ipc: bad size/offset");
  void* base = do_import(handle);
  return IpcMapping(this, base, handle.size, handle.offset);
}

bool cuda_backend_built() noexcept { return detail::cuda_built(); }
int cuda_device_count() noexcept { return detail::cuda_count(); }

std::unique_ptr<Device> make_device(std::string_view which, int ordinal) {
  if (which == "emulated") return make_emulated_device();
  if (which == "cuda") return detail::make_cuda_device(ordinal);
  if (which == "auto") {
    if (detail::cuda_count() > 0) return detail::make_cuda_device(ordinal);
    return make_emulated_device();
  }
  throw UserError("device '" + std::string(which) + "': expected auto, cuda or emulated");
}

std::unique_ptr<Device> make_device_from_env(int ordinal) {
  const char* v = std::getenv("TENSORHUB_DEVICE");
  if (v == nullptr || *v == '\0') return make_device("auto", ordinal);
  try {
    return make_device(v, ordinal);
  } catch (const UserError&) {
    throw UserError(std::string("TENSORHUB_DEVICE='") + v + "': expected auto, cuda or emulated");
  }
}

}  // namespace tensorhub::device
