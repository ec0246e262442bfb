#include "tensorhub/transport/descriptor.hpp"

#include <charconv>
#include <string>

#include "tensorhub/core/error.hpp"
#include "tensorhub/transport/transport.hpp"

namespace tensorhub::transport {

void* Transport::allocate(std::uint64_t /*bytes*/) {
  throw UserError("transport '" + std::string(name()) + "' has no registered memory pool");
}

void Transport::deallocate(void* /*p*/) {
  throw UserError("transport '" + std::string(name()) + "' has no registered memory pool");
}

std::string encode_region(const void* base, std::uint64_t bytes) {
  return encode_region(static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(base)), bytes);
}

std::string encode_region(std::uint64_t address, std::uint64_t bytes) {
  return std::to_string(address) + ":" + std::to_string(bytes);
}

Region decode_region(std::string_view d) {
  Region r;
  const auto colon = d.find(':');
  const auto bad = [&] { return TransportError("malformed region descriptor '" + std::string(d) + "'"); };
  if (colon == std::string_view::npos) throw bad();
  const auto a = std::from_chars(d.data(), d.data() + colon, r.address);
  const auto b = std::from_chars(d.data() + colon + 1, d.data() + d.size(), r.bytes);
  if (a.ec != std::errc{} || a.ptr != d.data() + colon || b.ec != std::errc{} || b.ptr != d.data() + d.size()) {
    throw bad();
  }
  return r;
}

}  // namespace tensorhub::transport
