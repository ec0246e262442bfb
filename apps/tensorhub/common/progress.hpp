// A one-line progress display (bytes, rate, ETA) for long pulls and snapshot I/O. It draws only
// when stderr is a terminal and at most 10 times a second; otherwise it stays silent, so logs
// and CI output are not flooded.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace tensorhub::cli {

class ProgressLine {
 public:
  // `enabled` = false forces silence (e.g. --quiet, or not rank 0).
  ProgressLine(std::string label, bool enabled = true);
  ~ProgressLine();
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

  void update(std::uint64_t done, std::uint64_t total);
  // Clears the line (call before printing the result).
  void finish();

 private:
  std::string label_;
  bool active_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_;
};

}  // namespace tensorhub::cli
