// Rank-tagged logging to stderr. A Logger is a small value owned by the component that logs;
// the level comes from TENSORHUB_LOG (error, warn, info, debug; default warn).
#pragma once

#include <string>
#include <string_view>

namespace tensorhub {

enum class LogLevel { kError = 0, kWarn = 1, kInfo = 2, kDebug = 3 };

// What one log record prints of `msg`: control characters (newlines included) as spaces, cut
// at limits::kMaxLogLineBytes with a note of how much was cut.
std::string log_line_text(std::string_view msg);

class Logger {
 public:
  explicit Logger(std::string tag);
  Logger(std::string tag, LogLevel level);

  void error(std::string_view msg) const { write(LogLevel::kError, msg); }
  void warn(std::string_view msg) const { write(LogLevel::kWarn, msg); }
  void info(std::string_view msg) const { write(LogLevel::kInfo, msg); }
  void debug(std::string_view msg) const { write(LogLevel::kDebug, msg); }
  bool enabled(LogLevel level) const { return level <= level_; }
  const std::string& tag() const { return tag_; }

 private:
  void write(LogLevel level, std::string_view msg) const;
  std::string tag_;
  LogLevel level_;
};

// Reads TENSORHUB_LOG (error, warn, info, debug; unset: warn). Throws UserError naming the
// variable for any other value. (Logger's constructor never throws: it reports a bad value on
// stderr and logs at warn.)
LogLevel log_level_from_env();

}  // namespace tensorhub
