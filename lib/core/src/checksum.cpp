#include "tensorhub/core/checksum.hpp"

#include <xxhash.h>

namespace tensorhub {

std::uint64_t checksum64(const void* data, std::size_t bytes) { return XXH64(data, bytes, 0); }

}  // namespace tensorhub
