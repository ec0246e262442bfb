// Per-chunk checksums stored in manifests: which algorithm a manifest's sums use, and the sums.
//
// New manifests use XXH3-64 (XXH3_64bits, seed 0: 1.5-1.8x the throughput of XXH64 on one core);
// manifests from older peers and snapshot files of format 1 and 2 carry XXH64 (seed 0) sums and
// stay readable. lib/device's XXH3 kernel (src/xxh3_core.hpp) computes the same XXH3-64.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>

namespace tensorhub {

// The numeric values are the wire values (share/proto/tensorhub.proto ChecksumAlgorithm): 0 is
// what a peer that predates the field sends, and such a peer hashed with XXH64.
enum class ChecksumAlgorithm : std::uint8_t {
  kXxh64 = 0,   // XXH64(data, n, 0)
  kXxh3_64 = 1  // XXH3_64bits(data, n)
};

// The algorithm this build publishes with.
inline constexpr ChecksumAlgorithm kDefaultChecksumAlgorithm = ChecksumAlgorithm::kXxh3_64;

// "xxh64" / "xxh3_64" (the JSON and CLI spelling) and back (nullopt for anything else).
std::string_view checksum_algorithm_name(ChecksumAlgorithm a);
std::optional<ChecksumAlgorithm> parse_checksum_algorithm(std::string_view name);

// The checksum of [data, data + bytes) under `algorithm`.
std::uint64_t checksum64(ChecksumAlgorithm algorithm, const void* data, std::size_t bytes);

// The checksum of bytes fed in pieces: digest() after update(a), update(b) is checksum64(algorithm,
// a + b) of the bytes back to back (a chunk that landed scattered in its destination).
class ChecksumStream {
 public:
  explicit ChecksumStream(ChecksumAlgorithm algorithm);
  ~ChecksumStream();
  ChecksumStream(const ChecksumStream&) = delete;
  ChecksumStream& operator=(const ChecksumStream&) = delete;
  void update(const void* data, std::size_t bytes);
  [[nodiscard]] std::uint64_t digest() const;

 private:
  struct State;
  ChecksumAlgorithm algorithm_;
  std::unique_ptr<State> state_;
};

// XXH64 (seed 0) of a byte range: wire-internal hashes that are no manifest sums (codec
// fingerprints, synthetic data keys). Never changes with the manifest algorithm.
std::uint64_t checksum64(const void* data, std::size_t bytes);

}  // namespace tensorhub
