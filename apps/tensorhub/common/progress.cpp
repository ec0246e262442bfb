#include "common/progress.hpp"

#include <unistd.h>

#include <cstdio>

#include "tensorhub/core/env.hpp"
#include "tensorhub/core/units.hpp"

namespace tensorhub::cli {
namespace {

std::FILE* progress_stream(bool force) {
  const auto env_forced = env::flag("TENSORHUB_PROGRESS");
  if (!force && env_forced && !*env_forced) return nullptr;
  if (isatty(STDERR_FILENO) == 1) return stderr;
  if (isatty(STDOUT_FILENO) == 1) return stdout;
  return force || env_forced ? stderr : nullptr;
}

}  // namespace

ProgressLine::ProgressLine(std::string label, bool enabled, bool force)
    : label_(std::move(label)),
      out_(enabled ? progress_stream(force) : nullptr),
      active_(out_ != nullptr),
      start_(std::chrono::steady_clock::now()),
      last_(start_) {}

ProgressLine::~ProgressLine() { finish(); }

void ProgressLine::update(std::uint64_t done, std::uint64_t total) {
  if (!active_) return;
  const auto now = std::chrono::steady_clock::now();
  if (done < total && now - last_ < std::chrono::milliseconds(100)) return;
  last_ = now;
  const double s = std::chrono::duration<double>(now - start_).count();
  const double rate = s > 0 ? static_cast<double>(done) / s : 0;
  const double eta = rate > 0 ? static_cast<double>(total - done) / rate : 0;
  std::fprintf(out_, "\r%s %s / %s  %.2f GB/s  ETA %.0f s   ", label_.c_str(), format_bytes(done).c_str(),
               format_bytes(total).c_str(), rate / 1e9, eta);
  std::fflush(out_);
  drawn_ = true;
}

void ProgressLine::finish() {
  if (!drawn_) return;
  std::fprintf(out_, "\r\033[K");
  std::fflush(out_);
  drawn_ = false;
}

}  // namespace tensorhub::cli
