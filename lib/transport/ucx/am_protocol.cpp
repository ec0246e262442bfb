#include "am_protocol.hpp"

#include <limits>

#include "tensorhub/core/checksum.hpp"

namespace tensorhub::transport::ucx {
namespace {

constexpr std::uint32_t kRequestMagic = 0x31414854;  // "THA1" little-endian
constexpr std::uint32_t kReplyMagic = 0x31524854;    // "THR1"
constexpr std::uint32_t kVersion = 1;

template <std::size_t N>
void put(std::array<std::byte, N>& out, std::size_t at, std::uint64_t v, std::size_t bytes) {
  for (std::size_t i = 0; i < bytes; ++i) out[at + i] = static_cast<std::byte>((v >> (8 * i)) & 0xff);
}

std::uint64_t get(std::span<const std::byte> in, std::size_t at, std::size_t bytes) {
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < bytes; ++i) v |= static_cast<std::uint64_t>(in[at + i]) << (8 * i);
  return v;
}

}  // namespace

std::array<std::byte, kAmRequestBytes> encode(const AmRequest& r) {
  std::array<std::byte, kAmRequestBytes> out{};
  put(out, 0, kRequestMagic, 4);
  put(out, 4, kVersion, 4);
  put(out, 8, r.request_id, 8);
  put(out, 16, r.address, 8);
  put(out, 24, r.length, 8);
  put(out, 32, r.key_hash, 8);
  return out;
}

std::array<std::byte, kAmReplyBytes> encode(const AmReply& r) {
  std::array<std::byte, kAmReplyBytes> out{};
  put(out, 0, kReplyMagic, 4);
  put(out, 4, static_cast<std::uint32_t>(r.status), 4);
  put(out, 8, r.request_id, 8);
  put(out, 16, r.length, 8);
  return out;
}

std::optional<AmRequest> decode_request(std::span<const std::byte> header) {
  if (header.size() != kAmRequestBytes || get(header, 0, 4) != kRequestMagic || get(header, 4, 4) != kVersion) {
    return std::nullopt;
  }
  AmRequest r{get(header, 8, 8), get(header, 16, 8), get(header, 24, 8), get(header, 32, 8)};
  if (r.length == 0 || r.length > kAmMaxPiece) return std::nullopt;
  if (r.address > std::numeric_limits<std::uint64_t>::max() - r.length) return std::nullopt;
  return r;
}

std::optional<AmReply> decode_reply(std::span<const std::byte> header) {
  if (header.size() != kAmReplyBytes || get(header, 0, 4) != kReplyMagic) return std::nullopt;
  AmReply r;
  r.status = static_cast<std::int32_t>(static_cast<std::uint32_t>(get(header, 4, 4)));
  r.request_id = get(header, 8, 8);
  r.length = get(header, 16, 8);
  if (r.length > kAmMaxPiece) return std::nullopt;
  return r;
}

std::uint64_t key_hash(std::span<const std::byte> packed_rkey) {
  return checksum64(packed_rkey.data(), packed_rkey.size());
}

}  // namespace tensorhub::transport::ucx
