#include "common/fault_pause.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "tensorhub/core/error.hpp"

namespace tensorhub::cli {

FaultPause FaultPause::from_environment() {
  FaultPause p;
  if (const char* dir = std::getenv("TENSORHUB_TEST_PAUSE_DIR"); dir != nullptr && *dir != '\0') {
    if (!std::filesystem::is_directory(dir)) {
      throw UserError(std::string("TENSORHUB_TEST_PAUSE_DIR='") + dir + "' is not a directory");
    }
    p.dir_ = dir;
  }
  return p;
}

void FaultPause::at_progress() {
  if (dir_.empty() || done_) return;
  done_ = true;
  const std::filesystem::path dir(dir_);
  std::ofstream(dir / ("paused." + std::to_string(::getpid()))).put('\n');
  // Waits for the test's signal: the hold file removed (checked every millisecond).
  std::error_code ec;
  while (std::filesystem::exists(dir / "hold", ec)) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

}  // namespace tensorhub::cli
