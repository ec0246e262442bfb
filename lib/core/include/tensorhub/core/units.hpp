// Byte sizes for humans: "512MiB" <-> 536870912.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace tensorhub {

// Parses "4096", "64KiB", "4MiB", "1GiB", "1.5GB" (SI and IEC suffixes); throws UserError.
std::uint64_t parse_bytes(std::string_view text);
// "512.0 MiB", "1.00 GiB", "17 B".
std::string format_bytes(std::uint64_t bytes);

}  // namespace tensorhub
