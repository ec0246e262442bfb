#include <cstring>

#include "tensorhub/core/error.hpp"
#include "tensorhub/device/device.hpp"

namespace tensorhub::device {
namespace {

constexpr std::string_view kPrefix = "thipc1:";
// backend(1) ordinal(4) size(8) offset(8) bytes(64), little-endian.
constexpr std::size_t kPacked = 1 + 4 + 8 + 8 + 64;

template <class T>
void put(std::uint8_t*& p, T v) {
  std::memcpy(p, &v, sizeof v);
  p += sizeof v;
}
template <class T>
T take(const std::uint8_t*& p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  p += sizeof v;
  return v;
}
int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

}  // namespace

std::string IpcHandle::encode() const {
  std::uint8_t raw[kPacked];
  std::uint8_t* p = raw;
  put(p, static_cast<std::uint8_t>(backend));
  put(p, ordinal);
  put(p, size);
  put(p, offset);
  std::memcpy(p, bytes.data(), bytes.size());
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out(kPrefix);
  for (std::uint8_t b : raw) {
    out.push_back(kHex[b >> 4]);
    out.push_back(kHex[b & 15]);
  }
  return out;
}

IpcHandle IpcHandle::decode(std::string_view text) {
  if (text.size() != kPrefix.size() + 2 * kPacked || text.substr(0, kPrefix.size()) != kPrefix) {
    throw UserError("device IPC handle: expected 'thipc1:' and " + std::to_string(2 * kPacked) + " hex digits");
  }
  std::uint8_t raw[kPacked];
  for (std::size_t i = 0; i < kPacked; ++i) {
    const int hi = hex_value(text[kPrefix.size() + 2 * i]);
    const int lo = hex_value(text[kPrefix.size() + 2 * i + 1]);
    if (hi < 0 || lo < 0) throw UserError("device IPC handle: not lower-case hex");
    raw[i] = static_cast<std::uint8_t>(hi * 16 + lo);
  }
  const std::uint8_t* p = raw;
  IpcHandle h;
  const auto kind = take<std::uint8_t>(p);
  if (kind != static_cast<std::uint8_t>(BackendKind::kEmulated) &&
      kind != static_cast<std::uint8_t>(BackendKind::kCuda)) {
    throw UserError("device IPC handle: unknown backend " + std::to_string(kind));
  }
  h.backend = static_cast<BackendKind>(kind);
  h.ordinal = take<std::int32_t>(p);
  h.size = take<std::uint64_t>(p);
  h.offset = take<std::uint64_t>(p);
  std::memcpy(h.bytes.data(), p, h.bytes.size());
  if (h.ordinal < 0 || h.size == 0 || h.offset >= h.size)
    throw UserError("device IPC handle: bad ordinal, size or offset");
  return h;
}

}  // namespace tensorhub::device
