#include "tensorhub/core/log.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>

namespace tensorhub {

LogLevel log_level_from_env() {
  const char* v = std::getenv("TENSORHUB_LOG");
  if (v == nullptr) return LogLevel::kWarn;
  const std::string s(v);
  if (s == "error") return LogLevel::kError;
  if (s == "info") return LogLevel::kInfo;
  if (s == "debug") return LogLevel::kDebug;
  return LogLevel::kWarn;
}

Logger::Logger(std::string tag) : Logger(std::move(tag), log_level_from_env()) {}
Logger::Logger(std::string tag, LogLevel level) : tag_(std::move(tag)), level_(level) {}

void Logger::write(LogLevel level, std::string_view msg) const {
  if (!enabled(level)) return;
  static constexpr const char* kNames[] = {"error", "warn", "info", "debug"};
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count() %
      100000000;
  // One fprintf per line keeps lines from different threads whole.
  std::fprintf(stderr, "[tensorhub %s %lld.%03lld %s] %.*s\n", tag_.c_str(), static_cast<long long>(ms / 1000),
               static_cast<long long>(ms % 1000), kNames[static_cast<int>(level)], static_cast<int>(msg.size()),
               msg.data());
}

}  // namespace tensorhub
