// Text forms of what a ucx holder hands out, so the coordinator can store them as opaque strings:
//   endpoint    "ucx:<label>:<worker address, base64url>"       (Transport::endpoint())
//   descriptor  "ucx:<address, hex>:<bytes, decimal>:<packed rkey, base64url>"   (Exposure)
// <label> names the process in error messages (default "<hostname>/<pid>"); it never contains ':'.
// base64url is RFC 4648 §5 without padding. No UCX types here: the codec is tested on its own.
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

std::string encode_descriptor(std::uint64_t address, std::uint64_t bytes, std::span<const std::byte> packed_rkey);
// Throws TransportError on malformed input. The result points into `descriptor`.
DescriptorText decode_descriptor(std::string_view descriptor);

}  // namespace tensorhub::transport::ucx
