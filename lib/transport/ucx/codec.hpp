// Text forms of what a ucx holder hands out, so the coordinator can store them as opaque strings:
//   endpoint    "ucx:<label>:<worker address, base64url>"       (Transport::endpoint())
//   descriptor  "ucx:<address, hex>:<bytes, decimal>:<packed rkey, base64url>"   (Exposure)
// <label> names the process in error messages (default "<hostname>/<pid>"); it never contains ':'.
// base64url is RFC 4648 §5 without padding. No UCX types here: the codec is tested on its own.
//
// Integrity (README "Security model"): the worker address and the packed rkey never reach UCX
// raw from the wire (ucp_address_unpack asserts and ucp_ep_rkey_unpack crashes on garbage).
// Each travels in a frame: "TH", format version 1, kind ('E' address, 'K' key), payload length
// (u32 LE, <= 64 KiB), xxHash64 (u64 LE) of (seed, kind, payload), payload. An rkey's seed is the
// xxHash64 of its holder's worker address, so a key is accepted only together with the endpoint
// of the worker that registered it. A bad frame throws TransportError: that read fails (and is
// re-assigned), the process does not.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tensorhub::transport::ucx {

std::string base64_encode(std::span<const std::byte> bytes);
// nullopt when `text` is not base64url without padding.
std::optional<std::vector<std::byte>> base64_decode(std::string_view text);

struct EndpointText {
  std::string label;
  std::vector<std::byte> worker_address;
};

// `label` may hold any characters; ':' and whitespace become '_'.
std::string encode_endpoint(std::string_view label, std::span<const std::byte> worker_address);
// Throws TransportError on malformed input.
EndpointText decode_endpoint(std::string_view endpoint);
// Cheap form check (prefix and separators), no decoding.
bool looks_like_endpoint(std::string_view endpoint) noexcept;

struct DescriptorText {
  std::uint64_t address = 0;
  std::uint64_t bytes = 0;
  std::string_view rkey;  // base64url, points into the decoded string; validated
};

// `holder_address` is the worker address of the transport that registered the key (binding).
std::string encode_descriptor(std::uint64_t address, std::uint64_t bytes, std::span<const std::byte> packed_rkey,
                              std::span<const std::byte> holder_address = {});
// Throws TransportError on malformed input. The result points into `descriptor`.
DescriptorText decode_descriptor(std::string_view descriptor);
// The packed key of a decoded descriptor, after its frame was checked against the worker
// address of the peer it is used with. Throws TransportError (never hands UCX a bad key).
std::vector<std::byte> decode_rkey(std::string_view rkey_text, std::span<const std::byte> holder_address);

}  // namespace tensorhub::transport::ucx
