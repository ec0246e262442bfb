// A one-line progress display (bytes, rate, ETA) for long pulls and snapshot I/O, at most 10
// times a second. It draws where a terminal is: stderr, else stdout (under mpirun, Open MPI gives
// the ranks a terminal on stdout but a pipe on stderr); otherwise it stays silent, so logs and CI
// output are not flooded. TENSORHUB_PROGRESS=1 (or a command's --progress) forces it (on the
// terminal if there is one, else stderr), =0 turns it off. The commands draw it on the first rank
// of the command only: one line per job, not per rank.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

namespace tensorhub::cli {

class ProgressLine {
 public:
  // `enabled` = false forces silence (e.g. --quiet, or not rank 0); `force` (--progress) draws it
  // even without a terminal and whatever TENSORHUB_PROGRESS says.
  ProgressLine(std::string label, bool enabled = true, bool force = false);
  ~ProgressLine();
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

  void update(std::uint64_t done, std::uint64_t total);
  // Clears the line (call before printing the result).
  void finish();

 private:
  std::string label_;
  std::FILE* out_;  // null: silent
  bool active_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_;
};

}  // namespace tensorhub::cli
