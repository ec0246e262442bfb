// Text forms of what a device_ipc holder hands out (the coordinator stores them as opaque strings):
//   endpoint    "dipc:<backend>:" <the cma endpoint text of the holder>
//               backend: "emulated" or "cuda" (a reader reads only holders of its own backend);
//               the cma part (cma/codec.hpp: host, boot id, pid namespace, pid, start time,
//               generation table) is what liveness and withdrawal are checked with.
//   descriptor  "dipc:<address, hex>:<bytes>:<slot>:<generation, hex>:<handle>"
//               address: the range in the holder's address space (used only when the reader is
//               the holder itself, which cannot open its own IPC handle on CUDA); handle: the
//               device IpcHandle::encode() of the allocation, its offset where the range starts,
//               or "-" for a 0-byte range (nothing to open).
// Untrusted input: decoding checks every field and range (bytes fit the allocation after the
// offset, slot and generation as in cma) and throws TransportError.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "cma/codec.hpp"
#include "tensorhub/device/device.hpp"

namespace tensorhub::transport::device_ipc {

struct EndpointText {
  device::BackendKind backend = device::BackendKind::kEmulated;
  cma::EndpointText holder;
};

struct DescriptorText {
  std::uint64_t address = 0;
  std::uint64_t bytes = 0;
  std::uint32_t slot = 0;
  std::uint64_t generation = 0;          // never 0
  std::optional<device::IpcHandle> ipc;  // empty for a 0-byte range
};

std::string encode_endpoint(const EndpointText& e);
EndpointText decode_endpoint(std::string_view endpoint);
bool looks_like_endpoint(std::string_view endpoint) noexcept;  // prefix only

std::string encode_descriptor(const DescriptorText& d);
DescriptorText decode_descriptor(std::string_view descriptor);

}  // namespace tensorhub::transport::device_ipc
