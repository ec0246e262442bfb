// xxHash64 of a byte range: the per-chunk checksum stored in manifests.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tensorhub {

std::uint64_t checksum64(const void* data, std::size_t bytes);

}  // namespace tensorhub
