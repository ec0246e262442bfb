#include "device_ipc/codec.hpp"

#include <array>
#include <charconv>

#include "tensorhub/core/error.hpp"
#include "tensorhub/core/limits.hpp"

namespace tensorhub::transport::device_ipc {
namespace {

constexpr std::string_view kPrefix = "dipc:";
constexpr std::string_view kNoHandle = "-";

TransportError malformed(std::string_view what, std::string_view text, std::string_view why) {
  constexpr std::size_t kShown = 80;
  std::string shown(text.substr(0, kShown));
  if (text.size() > kShown) shown += "...";
  return TransportError("malformed device_ipc " + std::string(what) + " '" + shown + "': " + std::string(why));
}

bool number(std::string_view s, std::uint64_t& v, int base = 10) {
  if (s.empty()) return false;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), v, base);
  return r.ec == std::errc{} && r.ptr == s.data() + s.size();
}

std::string hex(std::uint64_t v) {
  std::array<char, 16> b{};
  const auto r = std::to_chars(b.data(), b.data() + b.size(), v, 16);
  return std::string(b.data(), r.ptr);
}

// Takes the field up to the next ':' off `rest`; false when there is none or it is empty.
bool field(std::string_view& rest, std::string_view& out) {
  const auto colon = rest.find(':');
  if (colon == std::string_view::npos || colon == 0) return false;
  out = rest.substr(0, colon);
  rest.remove_prefix(colon + 1);
  return true;
}

}  // namespace

std::string encode_endpoint(const EndpointText& e) {
  return std::string(kPrefix) + std::string(device::to_string(e.backend)) + ":" + cma::encode_endpoint(e.holder);
}

bool looks_like_endpoint(std::string_view endpoint) noexcept { return endpoint.starts_with(kPrefix); }

EndpointText decode_endpoint(std::string_view text) {
  if (text.size() > limits::kMaxEndpointBytes) throw malformed("endpoint", text, "too long");
  if (!looks_like_endpoint(text)) throw malformed("endpoint", text, "no 'dipc:' prefix");
  std::string_view rest = text.substr(kPrefix.size());
  std::string_view backend;
  if (!field(rest, backend)) throw malformed("endpoint", text, "no backend");
  EndpointText e;
  if (backend == device::to_string(device::BackendKind::kEmulated)) {
    e.backend = device::BackendKind::kEmulated;
  } else if (backend == device::to_string(device::BackendKind::kCuda)) {
    e.backend = device::BackendKind::kCuda;
  } else {
    throw malformed("endpoint", text, "unknown device backend");
  }
  e.holder = cma::decode_endpoint(rest);  // TransportError when malformed
  return e;
}

std::string encode_descriptor(const DescriptorText& d) {
  return std::string(kPrefix) + hex(d.address) + ":" + std::to_string(d.bytes) + ":" + std::to_string(d.slot) + ":" +
         hex(d.generation) + ":" + (d.ipc ? d.ipc->encode() : std::string(kNoHandle));
}

DescriptorText decode_descriptor(std::string_view text) {
  if (text.size() > limits::kMaxRegionDescriptorBytes) throw malformed("descriptor", text, "too long");
  if (!text.starts_with(kPrefix)) throw malformed("descriptor", text, "no 'dipc:' prefix");
  std::string_view rest = text.substr(kPrefix.size());
  std::string_view address, bytes, slot, generation;
  if (!field(rest, address) || !field(rest, bytes) || !field(rest, slot) || !field(rest, generation)) {
    throw malformed("descriptor", text, "too few fields");
  }
  DescriptorText d;
  std::uint64_t s = 0;
  if (!number(address, d.address, 16) || d.address >= cma::kMaxAddress || !number(bytes, d.bytes) ||
      d.bytes > cma::kMaxAddress - d.address) {
    throw malformed("descriptor", text, "bad address or size");
  }
  if (!number(slot, s) || s >= cma::kMaxSlots || !number(generation, d.generation, 16) || d.generation == 0) {
    throw malformed("descriptor", text, "bad slot or generation");
  }
  d.slot = static_cast<std::uint32_t>(s);
  if (rest == kNoHandle) {
    if (d.bytes != 0) throw malformed("descriptor", text, "no IPC handle for a non-empty range");
    return d;
  }
  try {
    d.ipc = device::IpcHandle::decode(rest);
  } catch (const UserError& e) {
    throw malformed("descriptor", text, e.what());
  }
  if (d.ipc->size == 0 || d.ipc->offset > d.ipc->size || d.bytes > d.ipc->size - d.ipc->offset) {
    throw malformed("descriptor", text, "the range does not fit its allocation");
  }
  return d;
}

}  // namespace tensorhub::transport::device_ipc
