#include "staged/codec.hpp"

#include <arpa/inet.h>

#include <charconv>
#include <cstring>

#include "tensorhub/core/error.hpp"
#include "tensorhub/core/limits.hpp"

namespace tensorhub::transport::staged {
namespace {

constexpr std::string_view kPrefix = "staged1:";
enum class Type : std::uint8_t { kAuth = 1, kHello, kRequest, kReady, kRefused, kDone };
constexpr std::size_t kMaxReason = 4096;

TransportError malformed(std::string_view what, std::string_view text, std::string_view why) {
  constexpr std::size_t kShown = 80;
  std::string shown(text.substr(0, kShown));
  if (text.size() > kShown) shown += "...";
  return TransportError("malformed staged " + std::string(what) + " '" + shown + "': " + std::string(why));
}

bool number(std::string_view s, std::uint64_t& v) {
  if (s.empty() || s.size() > 20) return false;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  return r.ec == std::errc{} && r.ptr == s.data() + s.size();
}

// The next ':'-separated field (the last one when `last`).
bool field(std::string_view& rest, std::string_view& out, bool last = false) {
  const auto colon = rest.find(':');
  if (last) {
    if (colon != std::string_view::npos || rest.empty()) return false;
    out = rest;
    rest = {};
    return true;
  }
  if (colon == std::string_view::npos || colon == 0) return false;
  out = rest.substr(0, colon);
  rest.remove_prefix(colon + 1);
  return true;
}

void put64(std::string& out, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
void put32(std::string& out, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
void put_str(std::string& out, const std::string& s) {
  put32(out, static_cast<std::uint32_t>(s.size()));
  out += s;
}

// Reads fields off one frame's payload; any shortfall throws.
class Cursor {
 public:
  explicit Cursor(std::string_view p) : p_(p) {}
  std::uint64_t u64() { return take(8); }
  std::uint32_t u32() { return static_cast<std::uint32_t>(take(4)); }
  std::string str(std::size_t max) {
    const auto n = u32();
    if (n > max || n > p_.size()) throw TransportError("malformed staged frame: a string too long for its frame");
    std::string s(p_.substr(0, n));
    p_.remove_prefix(n);
    return s;
  }
  void bytes(std::uint8_t* out, std::size_t n) {
    if (p_.size() < n) throw TransportError("malformed staged frame: truncated");
    std::memcpy(out, p_.data(), n);
    p_.remove_prefix(n);
  }
  void end() const {
    if (!p_.empty()) throw TransportError("malformed staged frame: trailing bytes");
  }

 private:
  std::uint64_t take(int n) {
    if (p_.size() < static_cast<std::size_t>(n)) throw TransportError("malformed staged frame: truncated");
    std::uint64_t v = 0;
    for (int i = 0; i < n; ++i)
      v |= std::uint64_t{static_cast<std::uint8_t>(p_[static_cast<std::size_t>(i)])} << (8 * i);
    p_.remove_prefix(static_cast<std::size_t>(n));
    return v;
  }
  std::string_view p_;
};

}  // namespace

std::string encode_endpoint(const EndpointText& e) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string key;
  for (const auto b : e.key) {
    key.push_back(kHex[b >> 4]);
    key.push_back(kHex[b & 15]);
  }
  return std::string(kPrefix) + e.address + ":" + std::to_string(e.port) + ":" + std::to_string(e.pid) + ":" + key;
}

bool looks_like_endpoint(std::string_view text) noexcept { return text.starts_with(kPrefix); }

EndpointText decode_endpoint(std::string_view text) {
  if (text.size() > 128) throw malformed("endpoint", text, "too long");
  if (!looks_like_endpoint(text)) throw malformed("endpoint", text, "no 'staged1:' prefix");
  std::string_view rest = text.substr(kPrefix.size()), address, port, pid, key;
  if (!field(rest, address) || !field(rest, port) || !field(rest, pid) || !field(rest, key, true)) {
    throw malformed("endpoint", text, "expected address:port:pid:key");
  }
  EndpointText e;
  e.address = std::string(address);
  in_addr a{};
  if (::inet_pton(AF_INET, e.address.c_str(), &a) != 1) throw malformed("endpoint", text, "not an IPv4 address");
  std::uint64_t v = 0;
  if (!number(port, v) || v == 0 || v > 65535) throw malformed("endpoint", text, "bad port");
  e.port = static_cast<std::uint16_t>(v);
  if (!number(pid, v) || v == 0 || v > 0x7fffffff) throw malformed("endpoint", text, "bad pid");
  e.pid = static_cast<std::uint32_t>(v);
  if (key.size() != 2 * e.key.size()) throw malformed("endpoint", text, "the key is not 32 hex digits");
  for (std::size_t i = 0; i < e.key.size(); ++i) {
    std::uint8_t b = 0;
    const auto r = std::from_chars(key.data() + 2 * i, key.data() + 2 * i + 2, b, 16);
    if (r.ec != std::errc{} || r.ptr != key.data() + 2 * i + 2) throw malformed("endpoint", text, "bad key digit");
    e.key[i] = b;
  }
  return e;
}

std::string encode_descriptor(const DescriptorText& d) {
  return std::string(kPrefix) + std::to_string(d.id) + ":" + std::to_string(d.bytes);
}

DescriptorText decode_descriptor(std::string_view text) {
  if (text.size() > 64) throw malformed("descriptor", text, "too long");
  if (!text.starts_with(kPrefix)) throw malformed("descriptor", text, "no 'staged1:' prefix");
  std::string_view rest = text.substr(kPrefix.size()), id, bytes;
  DescriptorText d;
  if (!field(rest, id) || !field(rest, bytes, true) || !number(id, d.id) || !number(bytes, d.bytes) || d.id == 0) {
    throw malformed("descriptor", text, "expected id:bytes");
  }
  return d;
}

void encode(const Frame& f, std::string& out) {
  std::string p;
  Type t{};
  if (const auto* a = std::get_if<Auth>(&f)) {
    t = Type::kAuth;
    p.append(reinterpret_cast<const char*>(a->key.data()), a->key.size());
  } else if (const auto* h = std::get_if<Hello>(&f)) {
    t = Type::kHello;
    put64(p, h->slot_bytes);
    put32(p, h->slots);
    put_str(p, h->inner_endpoint);
    put_str(p, h->ring_descriptor);
  } else if (const auto* r = std::get_if<Request>(&f)) {
    t = Type::kRequest;
    put64(p, r->ticket);
    put64(p, r->id);
    put64(p, r->offset);
    put64(p, r->length);
  } else if (const auto* y = std::get_if<Ready>(&f)) {
    t = Type::kReady;
    put64(p, y->ticket);
    put32(p, y->slot);
  } else if (const auto* n = std::get_if<Refused>(&f)) {
    t = Type::kRefused;
    put64(p, n->ticket);
    put_str(p, n->reason.substr(0, kMaxReason));
  } else {
    t = Type::kDone;
    put32(p, std::get<Done>(f).slot);
  }
  if (p.size() + 1 > FrameReader::kMaxFrame) throw TransportError("staged: a frame too large to send");
  put32(out, static_cast<std::uint32_t>(p.size() + 1));
  out.push_back(static_cast<char>(t));
  out += p;
}

std::optional<Frame> FrameReader::next() {
  if (buffered() < 4) return std::nullopt;
  Cursor head(std::string_view(buf_).substr(pos_, 4));
  const std::uint32_t len = head.u32();
  if (len == 0 || len > kMaxFrame) throw TransportError("malformed staged frame: length " + std::to_string(len));
  if (buffered() < 4 + std::size_t{len}) return std::nullopt;
  const auto type = static_cast<Type>(static_cast<std::uint8_t>(buf_[pos_ + 4]));
  Cursor c(std::string_view(buf_).substr(pos_ + 5, len - 1));
  pos_ += 4 + std::size_t{len};
  Frame f;
  switch (type) {
    case Type::kAuth: {
      Auth a;
      c.bytes(a.key.data(), a.key.size());
      f = a;
      break;
    }
    case Type::kHello: {
      Hello h;
      h.slot_bytes = c.u64();
      h.slots = c.u32();
      h.inner_endpoint = c.str(limits::kMaxEndpointBytes);
      h.ring_descriptor = c.str(limits::kMaxRegionDescriptorBytes);
      if (h.slot_bytes == 0 || h.slots == 0 || h.slots > 4096 || h.slot_bytes > (1ull << 32)) {
        throw TransportError("malformed staged hello: bad ring geometry");
      }
      f = h;
      break;
    }
    case Type::kRequest:
      f = Request{c.u64(), c.u64(), c.u64(), c.u64()};
      break;
    case Type::kReady:
      f = Ready{c.u64(), c.u32()};
      break;
    case Type::kRefused: {
      Refused r;
      r.ticket = c.u64();
      r.reason = c.str(kMaxReason);
      f = r;
      break;
    }
    case Type::kDone:
      f = Done{c.u32()};
      break;
    default:
      throw TransportError("malformed staged frame: unknown type " + std::to_string(static_cast<int>(type)));
  }
  c.end();
  if (pos_ > 64 * 1024 && pos_ * 2 > buf_.size()) {
    buf_.erase(0, pos_);
    pos_ = 0;
  }
  return f;
}

}  // namespace tensorhub::transport::staged
