// Text forms of what a cma holder hands out (the coordinator stores them as opaque strings):
//   endpoint    "cma:<hostname>:<boot id>:<pid ns>:<pid>:<start time>:<table, hex>:<slots>"
//   descriptor  "cma:<address, hex>:<bytes>:<slot>:<generation, hex>"
// <start time> is the holder's /proc/<pid>/stat start time: a reader reads pid <pid> only while
// it is that incarnation. <table> is the address, in the holder, of its generation table
// (generation_table.hpp) of <slots> 64-bit words; a descriptor is valid while word <slot> holds
// <generation>. Everything is untrusted input: decoding checks the form, every number's range
// (no overflow of address + bytes, slot < slots, pid in [1, 2^22]) and throws TransportError.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "identity.hpp"

namespace tensorhub::transport::cma {

inline constexpr std::uint32_t kMaxSlots = 1u << 16;
inline constexpr std::uint64_t kMaxAddress = 1ull << 57;  // x86-64 5-level / arm64 user space

struct EndpointText {
  HostIdentity host;
  pid_t pid = 0;
  std::uint64_t start_time = 0;
  std::uint64_t table = 0;  // address of the generation table in the holder
  std::uint32_t slots = 0;
};

struct DescriptorText {
  std::uint64_t address = 0;
  std::uint64_t bytes = 0;
  std::uint32_t slot = 0;
  std::uint64_t generation = 0;  // never 0
};

std::string encode_endpoint(const EndpointText& e);
EndpointText decode_endpoint(std::string_view endpoint);
bool looks_like_endpoint(std::string_view endpoint) noexcept;  // prefix only

std::string encode_descriptor(const DescriptorText& d);
DescriptorText decode_descriptor(std::string_view descriptor);

// "<hostname>/<pid>": names a holder in messages.
std::string label(const EndpointText& e);

}  // namespace tensorhub::transport::cma
