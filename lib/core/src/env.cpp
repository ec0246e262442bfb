#include "tensorhub/core/env.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>

#include "tensorhub/core/error.hpp"
#include "tensorhub/core/units.hpp"

namespace tensorhub::env {
namespace {

[[noreturn]] void bad(const char* name, std::string_view value, const std::string& expected) {
  throw UserError(std::string(name) + "='" + std::string(value) + "': expected " + expected);
}

template <class T>
std::optional<T> parse_int(const char* name, T min, T max, const char* unit) {
  const auto v = text(name);
  if (!v) return std::nullopt;
  T x{};
  const auto* end = v->data() + v->size();
  const auto r = std::from_chars(v->data(), end, x);
  const std::string range = "[" + std::to_string(min) + ", " + std::to_string(max) + "]";
  if (r.ec != std::errc{} || r.ptr != end) bad(name, *v, std::string("a whole number") + unit + " in " + range);
  if (x < min || x > max) bad(name, *v, std::string("a value") + unit + " in " + range);
  return x;
}

}  // namespace

std::optional<std::string> text(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return std::nullopt;
  return std::string(v);
}

std::optional<std::string> raw(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr) return std::nullopt;
  return std::string(v);
}

std::optional<std::uint64_t> integer(const char* name, std::uint64_t min, std::uint64_t max) {
  return parse_int<std::uint64_t>(name, min, max, "");
}

std::optional<std::uint64_t> bytes(const char* name, std::uint64_t min, std::uint64_t max) {
  const auto v = text(name);
  if (!v) return std::nullopt;
  std::uint64_t b = 0;
  try {
    b = parse_bytes(*v);
  } catch (const UserError& e) {
    bad(name, *v, std::string("a byte size such as 4096, 64KiB or 1GiB (") + e.what() + ")");
  }
  if (b < min || b > max) {
    bad(name, *v, "a size between " + format_bytes(min) + " and " + format_bytes(max));
  }
  return b;
}

std::optional<bool> flag(const char* name) {
  const auto v = text(name);
  if (!v) return std::nullopt;
  std::string s = *v;
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (s == "1" || s == "true" || s == "yes" || s == "on") return true;
  if (s == "0" || s == "false" || s == "no" || s == "off") return false;
  bad(name, *v, "1/0, true/false, yes/no or on/off");
}

std::optional<std::chrono::milliseconds> millis(const char* name, std::int64_t min, std::int64_t max) {
  const auto v = parse_int<std::int64_t>(name, min, max, " of milliseconds");
  return v ? std::optional(std::chrono::milliseconds(*v)) : std::nullopt;
}

std::optional<std::chrono::microseconds> micros(const char* name, std::int64_t min, std::int64_t max) {
  const auto v = parse_int<std::int64_t>(name, min, max, " of microseconds");
  return v ? std::optional(std::chrono::microseconds(*v)) : std::nullopt;
}

std::optional<std::chrono::seconds> seconds(const char* name, std::int64_t min, std::int64_t max) {
  const auto v = parse_int<std::int64_t>(name, min, max, " of seconds");
  return v ? std::optional(std::chrono::seconds(*v)) : std::nullopt;
}

std::optional<std::string> choice(const char* name, std::initializer_list<std::string_view> choices) {
  const auto v = text(name);
  if (!v) return std::nullopt;
  std::string list;
  for (const auto c : choices) {
    if (c == *v) return v;
    list += (list.empty() ? "" : ", ") + std::string(c);
  }
  bad(name, *v, "one of " + list);
}

}  // namespace tensorhub::env
