#include "tensorhub/core/units.hpp"

#include <array>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <utility>

#include "tensorhub/core/error.hpp"

namespace tensorhub {

std::uint64_t parse_bytes(std::string_view text) {
  const std::string original(text);
  std::size_t pos = 0;
  while (pos < text.size() && (std::isdigit(static_cast<unsigned char>(text[pos])) || text[pos] == '.')) ++pos;
  if (pos == 0) throw UserError("bad byte size '" + original + "' (example: 512MiB)");
  double value = 0;
  try {
    std::size_t used = 0;
    value = std::stod(std::string(text.substr(0, pos)), &used);
    if (used != pos) throw UserError("bad byte size '" + original + "' (example: 512MiB)");
  } catch (const std::logic_error&) {
    throw UserError("bad byte size '" + original + "' (example: 512MiB)");
  }
  std::string suffix(text.substr(pos));
  for (auto& c : suffix) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  static const std::array<std::pair<std::string_view, double>, 11> kSuffixes{{
      {"", 1.0},
      {"b", 1.0},
      {"k", 1024.0},
      {"kib", 1024.0},
      {"kb", 1e3},
      {"m", 1024.0 * 1024},
      {"mib", 1024.0 * 1024},
      {"mb", 1e6},
      {"g", 1024.0 * 1024 * 1024},
      {"gib", 1024.0 * 1024 * 1024},
      {"gb", 1e9},
  }};
  for (const auto& [name, scale] : kSuffixes) {
    if (suffix == name) {
      const double bytes = value * scale;
      if (!(bytes >= 0) || bytes > 1e18) throw UserError("byte size out of range: '" + original + "'");
      return static_cast<std::uint64_t>(std::llround(bytes));
    }
  }
  throw UserError("bad byte size suffix in '" + original + "' (use B, KiB, MiB, GiB, KB, MB, GB)");
}

std::string format_bytes(std::uint64_t bytes) {
  static const std::array<const char*, 5> kUnits{"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  std::size_t unit = 0;
  while (v >= 1024.0 && unit + 1 < kUnits.size()) {
    v /= 1024.0;
    ++unit;
  }
  char buf[48];
  if (unit == 0) {
    std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(bytes));
  } else {
    std::snprintf(buf, sizeof buf, "%.2f %s", v, kUnits[unit]);
  }
  return buf;
}

}  // namespace tensorhub
