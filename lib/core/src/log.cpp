#include "tensorhub/core/log.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <utility>

#include "tensorhub/core/env.hpp"
#include "tensorhub/core/limits.hpp"

namespace tensorhub {

LogLevel log_level_from_env() {
  const auto v = env::choice("TENSORHUB_LOG", {"error", "warn", "info", "debug"});
  if (!v || *v == "warn") return LogLevel::kWarn;
  if (*v == "error") return LogLevel::kError;
  if (*v == "info") return LogLevel::kInfo;
  return LogLevel::kDebug;
}

namespace {

// A Logger is made anywhere, destructors and error paths included, so it never throws: a bad
// TENSORHUB_LOG is reported on stderr (by every logger made, so it is not missed) and read as
// warn. Entry points that want it as an error call log_level_from_env() first.
LogLevel level_or_warn() noexcept {
  try {
    return log_level_from_env();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "[tensorhub log] %s; logging at warn\n", e.what());
    return LogLevel::kWarn;
  }
}

}  // namespace

std::string log_line_text(std::string_view msg) {
  const std::size_t keep = std::min(msg.size(), limits::kMaxLogLineBytes);
  std::string out(msg.substr(0, keep));
  for (auto& ch : out) {
    const auto c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c == 0x7F) ch = ' ';  // one record per line, no terminal escapes
  }
  if (keep < msg.size()) out += "... (" + std::to_string(msg.size() - keep) + " more bytes cut)";
  return out;
}

Logger::Logger(std::string tag) : Logger(std::move(tag), level_or_warn()) {}
Logger::Logger(std::string tag, LogLevel level) : tag_(std::move(tag)), level_(level) {}

void Logger::write(LogLevel level, std::string_view msg) const {
  if (!enabled(level)) return;
  static constexpr const char* kNames[] = {"error", "warn", "info", "debug"};
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count() %
      100000000;
  const std::string text = log_line_text(msg);
  // One fprintf per line keeps lines from different threads whole.
  std::fprintf(stderr, "[tensorhub %s %lld.%03lld %s] %.*s\n", tag_.c_str(), static_cast<long long>(ms / 1000),
               static_cast<long long>(ms % 1000), kNames[static_cast<int>(level)], static_cast<int>(text.size()),
               text.data());
}

}  // namespace tensorhub
