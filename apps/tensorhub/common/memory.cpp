#include "common/memory.hpp"

#include "tensorhub/core/env.hpp"
#include "tensorhub/core/error.hpp"

namespace tensorhub::cli {

const char* const kMemoryHelp =
    "where the tensors live: host, or cuda = device memory of the hub's device (TENSORHUB_DEVICE, default "
    "auto: a GPU when one is visible, else the EMULATED device: CPU memory, CPU figures)";

MemoryKind parse_memory(const std::string& flag) {
  if (flag == "host") return MemoryKind::kHost;
  if (flag == "cuda") return MemoryKind::kCuda;
  throw UserError("--memory must be 'host' or 'cuda', not '" + flag + "'");
}

std::string device_for(MemoryKind memory) {
  if (memory == MemoryKind::kHost) return "";
  return env::text("TENSORHUB_DEVICE").value_or("auto");
}

DeviceMirror::DeviceMirror(Hub& hub, const Arena& host) : hub_(hub), bytes_(host.bytes()) {
  base_ = hub.allocate_device(bytes_);
  for (const auto& t : host.tensors()) {
    Tensor d = t;
    d.data = static_cast<unsigned char*>(base_) + (static_cast<unsigned char*>(t.data) - host.data());
    d.memory = MemoryKind::kCuda;
    tensors_.push_back(d);
  }
}

void DeviceMirror::upload(const Arena& host) {
  hub_.copy_memory(base_, MemoryKind::kCuda, host.data(), MemoryKind::kHost, bytes_);
}

void DeviceMirror::download(Arena& host) {
  hub_.copy_memory(host.data(), MemoryKind::kHost, base_, MemoryKind::kCuda, bytes_);
}

}  // namespace tensorhub::cli
