// What a `staged` holder hands out, and the frames of its control channel (share/doc/transport-device.md).
//
//   endpoint    "staged1:<IPv4 address>:<port>:<pid>:<key, 32 hex>"
//               where the holder's server listens; the key (16 bytes from getrandom) is the
//               credential: the server serves only a connection whose first frame carries it, and
//               endpoints reach only the readers the coordinator assigned to the holder.
//   descriptor  "staged1:<id>:<bytes>"    id: never reused by the holder (a withdrawn one stays
//               withdrawn), bytes: the size of the region.
//
// Frames on the TCP stream: u32 length (of what follows), u8 type, payload; integers little
// endian. Untrusted input: every field is checked; anything malformed throws TransportError.
//   kAuth     reader -> holder  key[16]
//   kHello    holder -> reader  u64 slot_bytes, u32 slots, str inner endpoint, str ring descriptor
//   kRequest  reader -> holder  u64 ticket, u64 id, u64 offset, u64 length
//   kReady    holder -> reader  u64 ticket, u32 slot (the bytes are in that staging slot)
//   kRefused  holder -> reader  u64 ticket, str reason (withdrawn, out of range, device error)
//   kDone     reader -> holder  u32 slot (read it; the holder may reuse it)
// (str: u32 length, bytes.)
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

namespace tensorhub::transport::staged {

using Key = std::array<std::uint8_t, 16>;

struct EndpointText {
  std::string address;  // IPv4 dotted quad
  std::uint16_t port = 0;
  std::uint32_t pid = 0;
  Key key{};
};

struct DescriptorText {
  std::uint64_t id = 0;
  std::uint64_t bytes = 0;
};

std::string encode_endpoint(const EndpointText& e);
EndpointText decode_endpoint(std::string_view text);
bool looks_like_endpoint(std::string_view text) noexcept;
std::string encode_descriptor(const DescriptorText& d);
DescriptorText decode_descriptor(std::string_view text);

struct Auth {
  Key key{};
};
struct Hello {
  std::uint64_t slot_bytes = 0;
  std::uint32_t slots = 0;
  std::string inner_endpoint;
  std::string ring_descriptor;
};
struct Request {
  std::uint64_t ticket = 0;
  std::uint64_t id = 0;
  std::uint64_t offset = 0;
  std::uint64_t length = 0;
};
struct Ready {
  std::uint64_t ticket = 0;
  std::uint32_t slot = 0;
};
struct Refused {
  std::uint64_t ticket = 0;
  std::string reason;
};
struct Done {
  std::uint32_t slot = 0;
};
using Frame = std::variant<Auth, Hello, Request, Ready, Refused, Done>;

// Appends the encoded frame to `out`.
void encode(const Frame& f, std::string& out);

// Bytes off a stream, cut into frames. next() returns the next whole frame or nullopt when more
// bytes are needed; it throws TransportError for an unknown type, a bad length or bad fields.
class FrameReader {
 public:
  static constexpr std::size_t kMaxFrame = 160 * 1024;  // a Hello with two 64 KiB strings
  void append(const char* data, std::size_t n) { buf_.append(data, n); }
  std::optional<Frame> next();
  std::size_t buffered() const { return buf_.size() - pos_; }

 private:
  std::string buf_;
  std::size_t pos_ = 0;
};

}  // namespace tensorhub::transport::staged
