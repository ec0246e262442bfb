// The one reader of TensorHub's environment variables (every TENSORHUB_* variable is listed in
// share/doc/environment.md). An unset or empty variable is "not set" (nullopt); a set variable
// whose value does not parse, or lies outside its range, throws UserError naming the variable,
// the value and what was expected — it is never silently read as 0 or as the default.
#pragma once

#include <chrono>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

namespace tensorhub::env {

// The raw value; nullopt when unset or empty.
std::optional<std::string> text(const char* name);

// The raw value, "" when set but empty; nullopt only when unset (for variables where an empty
// value means something, e.g. TENSORHUB_DC="" overrides the topology file).
std::optional<std::string> raw(const char* name);

// A decimal integer in [min, max].
std::optional<std::uint64_t> integer(const char* name, std::uint64_t min = 0,
                                     std::uint64_t max = std::numeric_limits<std::uint64_t>::max());

// A byte size as parse_bytes reads it ("4096", "64KiB", "1GiB") in [min, max].
std::optional<std::uint64_t> bytes(const char* name, std::uint64_t min = 0,
                                   std::uint64_t max = std::numeric_limits<std::uint64_t>::max());

// 1/0, true/false, yes/no, on/off (any case).
std::optional<bool> flag(const char* name);

// A decimal number of milliseconds / microseconds / seconds in [min, max] (same unit).
std::optional<std::chrono::milliseconds> millis(const char* name, std::int64_t min = 0,
                                                std::int64_t max = std::numeric_limits<std::int64_t>::max());
std::optional<std::chrono::microseconds> micros(const char* name, std::int64_t min = 0,
                                                std::int64_t max = std::numeric_limits<std::int64_t>::max());
std::optional<std::chrono::seconds> seconds(const char* name, std::int64_t min = 0,
                                            std::int64_t max = std::numeric_limits<std::int64_t>::max());

// One of `choices` (exact match).
std::optional<std::string> choice(const char* name, std::initializer_list<std::string_view> choices);

}  // namespace tensorhub::env
