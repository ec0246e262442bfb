#include "tensorhub/core/checksum.hpp"

#include <xxhash.h>

#include <string>

#include "tensorhub/core/error.hpp"

namespace tensorhub {

std::string_view checksum_algorithm_name(ChecksumAlgorithm a) {
  switch (a) {
    case ChecksumAlgorithm::kXxh64:
      return "xxh64";
    case ChecksumAlgorithm::kXxh3_64:
      return "xxh3_64";
  }
  throw UserError("unknown checksum algorithm " + std::to_string(static_cast<int>(a)));
}

std::optional<ChecksumAlgorithm> parse_checksum_algorithm(std::string_view name) {
  if (name == "xxh64") return ChecksumAlgorithm::kXxh64;
  if (name == "xxh3_64") return ChecksumAlgorithm::kXxh3_64;
  return std::nullopt;
}

std::uint64_t checksum64(ChecksumAlgorithm algorithm, const void* data, std::size_t bytes) {
  switch (algorithm) {
    case ChecksumAlgorithm::kXxh64:
      return XXH64(data, bytes, 0);
    case ChecksumAlgorithm::kXxh3_64:
      return XXH3_64bits(data, bytes);
  }
  throw UserError("unknown checksum algorithm " + std::to_string(static_cast<int>(algorithm)));
}

std::uint64_t checksum64(const void* data, std::size_t bytes) { return XXH64(data, bytes, 0); }

}  // namespace tensorhub
