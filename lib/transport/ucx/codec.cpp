#include "codec.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>

#include "tensorhub/core/checksum.hpp"
#include "tensorhub/core/error.hpp"

namespace tensorhub::transport::ucx {
namespace {

constexpr std::string_view kPrefix = "ucx:";
constexpr std::string_view kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

constexpr std::array<std::int8_t, 256> make_reverse() {
  std::array<std::int8_t, 256> r{};
  r.fill(-1);
  for (std::size_t i = 0; i < kAlphabet.size(); ++i)
    r[static_cast<unsigned char>(kAlphabet[i])] = static_cast<std::int8_t>(i);
  return r;
}
constexpr auto kReverse = make_reverse();

bool is_base64(std::string_view text) {
  if (text.size() % 4 == 1) return false;  // no byte count encodes to 4k+1 characters
  for (const char c : text) {
    if (kReverse[static_cast<unsigned char>(c)] < 0) return false;
  }
  return true;
}

TransportError malformed(std::string_view what, std::string_view text) {
  constexpr std::size_t kShown = 80;
  std::string shown(text.substr(0, kShown));
  if (text.size() > kShown) shown += "...";
  return TransportError("malformed ucx " + std::string(what) + " '" + shown + "'");
}

constexpr std::size_t kFrameHead = 2 + 1 + 1 + 4 + 8;
constexpr std::size_t kMaxPayload = 64 << 10;
constexpr std::uint8_t kFrameVersion = 1;

std::uint64_t frame_sum(std::uint64_t seed, char kind, std::span<const std::byte> payload) {
  std::vector<std::byte> all(sizeof seed + 1 + payload.size());
  for (std::size_t i = 0; i < sizeof seed; ++i) all[i] = static_cast<std::byte>((seed >> (8 * i)) & 0xff);
  all[sizeof seed] = static_cast<std::byte>(kind);
  std::copy(payload.begin(), payload.end(), all.begin() + sizeof seed + 1);
  return checksum64(all.data(), all.size());
}

std::vector<std::byte> frame(char kind, std::uint64_t seed, std::span<const std::byte> payload) {
  std::vector<std::byte> out(kFrameHead + payload.size());
  out[0] = std::byte{'T'};
  out[1] = std::byte{'H'};
  out[2] = std::byte{kFrameVersion};
  out[3] = static_cast<std::byte>(kind);
  const auto n = static_cast<std::uint32_t>(payload.size());
  for (std::size_t i = 0; i < 4; ++i) out[4 + i] = static_cast<std::byte>((n >> (8 * i)) & 0xff);
  const auto sum = frame_sum(seed, kind, payload);
  for (std::size_t i = 0; i < 8; ++i) out[8 + i] = static_cast<std::byte>((sum >> (8 * i)) & 0xff);
  std::copy(payload.begin(), payload.end(), out.begin() + kFrameHead);
  return out;
}

// The payload of a valid frame of `kind` and `seed`; nullopt otherwise.
std::optional<std::vector<std::byte>> unframe(char kind, std::uint64_t seed, std::span<const std::byte> f) {
  if (f.size() < kFrameHead || f[0] != std::byte{'T'} || f[1] != std::byte{'H'} || f[2] != std::byte{kFrameVersion} ||
      f[3] != static_cast<std::byte>(kind)) {
    return std::nullopt;
  }
  std::uint32_t n = 0;
  for (std::size_t i = 0; i < 4; ++i) n |= static_cast<std::uint32_t>(f[4 + i]) << (8 * i);
  std::uint64_t sum = 0;
  for (std::size_t i = 0; i < 8; ++i) sum |= static_cast<std::uint64_t>(f[8 + i]) << (8 * i);
  if (n == 0 || n > kMaxPayload || f.size() != kFrameHead + n) return std::nullopt;
  const auto payload = f.subspan(kFrameHead);
  if (frame_sum(seed, kind, payload) != sum) return std::nullopt;
  return std::vector<std::byte>(payload.begin(), payload.end());
}

std::uint64_t binding_seed(std::span<const std::byte> holder_address) {
  return holder_address.empty() ? 0 : checksum64(holder_address.data(), holder_address.size());
}

}  // namespace

std::string base64_encode(std::span<const std::byte> bytes) {
  std::string out;
  out.reserve((bytes.size() * 4 + 2) / 3);
  std::uint32_t acc = 0;
  int bits = 0;
  for (const auto b : bytes) {
    acc = (acc << 8) | static_cast<std::uint8_t>(b);
    bits += 8;
    while (bits >= 6) {
      bits -= 6;
      out.push_back(kAlphabet[(acc >> bits) & 0x3f]);
    }
  }
  if (bits > 0) out.push_back(kAlphabet[(acc << (6 - bits)) & 0x3f]);
  return out;
}

std::optional<std::vector<std::byte>> base64_decode(std::string_view text) {
  if (!is_base64(text)) return std::nullopt;
  std::vector<std::byte> out;
  out.reserve(text.size() * 3 / 4);
  std::uint32_t acc = 0;
  int bits = 0;
  for (const char c : text) {
    acc = (acc << 6) | static_cast<std::uint32_t>(kReverse[static_cast<unsigned char>(c)]);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<std::byte>((acc >> bits) & 0xff));
    }
  }
  // Canonical form only: the leftover bits of the last character must be zero.
  if ((acc & ((1u << bits) - 1)) != 0) return std::nullopt;
  return out;
}

std::string encode_endpoint(std::string_view label, std::span<const std::byte> worker_address) {
  std::string clean(label);
  for (auto& c : clean) {
    if (c == ':' || std::isspace(static_cast<unsigned char>(c))) c = '_';
  }
  if (clean.empty()) clean = "_";
  return std::string(kPrefix) + clean + ":" + base64_encode(frame('E', 0, worker_address));
}

bool looks_like_endpoint(std::string_view e) noexcept {
  if (!e.starts_with(kPrefix)) return false;
  const auto rest = e.substr(kPrefix.size());
  const auto colon = rest.find(':');
  return colon != 0 && colon != std::string_view::npos && colon + 1 < rest.size() &&
         rest.find(':', colon + 1) == std::string_view::npos;
}

EndpointText decode_endpoint(std::string_view e) {
  if (!looks_like_endpoint(e)) throw malformed("endpoint", e);
  const auto rest = e.substr(kPrefix.size());
  const auto colon = rest.find(':');
  const auto framed = base64_decode(rest.substr(colon + 1));
  if (!framed) throw malformed("endpoint", e);
  auto address = unframe('E', 0, *framed);
  if (!address) throw malformed("endpoint (integrity check failed)", e);
  return EndpointText{std::string(rest.substr(0, colon)), std::move(*address)};
}

std::string encode_descriptor(std::uint64_t address, std::uint64_t bytes, std::span<const std::byte> packed_rkey,
                              std::span<const std::byte> holder_address) {
  std::array<char, 16> hex{};
  const auto r = std::to_chars(hex.data(), hex.data() + hex.size(), address, 16);
  return std::string(kPrefix) + std::string(hex.data(), r.ptr) + ":" + std::to_string(bytes) + ":" +
         base64_encode(frame('K', binding_seed(holder_address), packed_rkey));
}

std::vector<std::byte> decode_rkey(std::string_view rkey_text, std::span<const std::byte> holder_address) {
  const auto framed = base64_decode(rkey_text);
  if (!framed) throw malformed("remote key", rkey_text);
  auto key = unframe('K', binding_seed(holder_address), *framed);
  if (!key) throw malformed("remote key (integrity check failed, or not registered by this peer)", rkey_text);
  return std::move(*key);
}

DescriptorText decode_descriptor(std::string_view d) {
  if (!d.starts_with(kPrefix)) throw malformed("descriptor", d);
  const auto rest = d.substr(kPrefix.size());
  const auto c1 = rest.find(':');
  const auto c2 = c1 == std::string_view::npos ? c1 : rest.find(':', c1 + 1);
  if (c2 == std::string_view::npos) throw malformed("descriptor", d);
  DescriptorText out;
  const char* p = rest.data();
  const auto a = std::from_chars(p, p + c1, out.address, 16);
  const auto b = std::from_chars(p + c1 + 1, p + c2, out.bytes);
  out.rkey = rest.substr(c2 + 1);
  if (c1 == 0 || a.ec != std::errc{} || a.ptr != p + c1 || b.ec != std::errc{} || b.ptr != p + c2 || out.rkey.empty() ||
      !is_base64(out.rkey)) {
    throw malformed("descriptor", d);
  }
  return out;
}

}  // namespace tensorhub::transport::ucx
