// Region descriptors shared by the address-based backends: "<address>:<bytes>" in decimal.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace tensorhub::transport {

struct Region {
  std::uint64_t address = 0;
  std::uint64_t bytes = 0;
};

std::string encode_region(const void* base, std::uint64_t bytes);
std::string encode_region(std::uint64_t address, std::uint64_t bytes);
// Throws TransportError on malformed input.
Region decode_region(std::string_view descriptor);

}  // namespace tensorhub::transport
