// Wire format of the ucx transport's active-message reads (share/doc/transport-ucx.md, "Reads
// served by active messages"). A reader asks a holder for bytes with a request (a user header,
// no payload); the holder answers with a reply whose payload is the bytes. No UCX types here: the
// codec is tested on its own and every header that arrives is decoded here before use.
//
//   request  (40 bytes)  magic "THA1" | version u32 | request id u64 | address u64 | length u64 |
//                        key hash u64 (of the packed remote key the reader was handed)
//   reply    (24 bytes)  magic "THR1" | status i32 (ucs_status_t) | request id u64 | length u64
//
// All fields little-endian. A header of another size, magic or version decodes to nullopt.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

namespace tensorhub::transport::ucx {

// Active-message ids this transport registers on its worker (any value < 2^16 is free for the
// application in UCX; these spell "TH" + 1/2).
constexpr unsigned kAmReadRequestId = 0x5401;
constexpr unsigned kAmReadReplyId = 0x5402;
// The most bytes one request may ask for: readers split a read into pieces of at most this.
constexpr std::uint64_t kAmMaxPiece = 16ull << 20;

struct AmRequest {
  std::uint64_t request_id = 0;
  std::uint64_t address = 0;
  std::uint64_t length = 0;
  std::uint64_t key_hash = 0;
};

struct AmReply {
  std::int32_t status = 0;  // UCS_OK, or why the holder refused (the payload is then empty)
  std::uint64_t request_id = 0;
  std::uint64_t length = 0;  // payload bytes that follow; 0 on a refusal
};

constexpr std::size_t kAmRequestBytes = 40;
constexpr std::size_t kAmReplyBytes = 24;

std::array<std::byte, kAmRequestBytes> encode(const AmRequest& r);
std::array<std::byte, kAmReplyBytes> encode(const AmReply& r);
// nullopt for a header of the wrong size, magic or version, or a request whose length is 0, over
// kAmMaxPiece, or whose range wraps around the address space.
std::optional<AmRequest> decode_request(std::span<const std::byte> header);
std::optional<AmReply> decode_reply(std::span<const std::byte> header);

// The key hash of a packed remote key (what a holder records per registration and a request
// carries): proof that the reader was handed a descriptor of that registration.
std::uint64_t key_hash(std::span<const std::byte> packed_rkey);

}  // namespace tensorhub::transport::ucx
