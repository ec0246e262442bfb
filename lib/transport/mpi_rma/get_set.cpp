#include "get_set.hpp"

#include <mpi.h>

#include <string>

namespace tensorhub::transport {
namespace {

std::string mpi_error_text(int rc) {
  char text[MPI_MAX_ERROR_STRING] = {};
  int len = 0;
  if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS) return "MPI error " + std::to_string(rc);
  return std::string(text, static_cast<std::size_t>(len));
}

}  // namespace

void GetSet::start(mpi::Window& window, void* dst, std::uint64_t bytes, int target, MPI_Aint disp, std::uint64_t tag,
                   MPI_Datatype origin) {
  window.get(dst, bytes, target, disp, origin);
  tags_[target].push_back(tag);
  ++size_;
}

void GetSet::complete(mpi::Window& window, std::vector<Completion>& out) {
  for (auto& [target, tags] : tags_) {
    const int rc = window.flush(target);
    const bool ok = rc == MPI_SUCCESS;
    const std::string error =
        ok ? std::string() : "MPI_Win_flush of rank " + std::to_string(target) + " failed: " + mpi_error_text(rc);
    for (const auto tag : tags) out.push_back(Completion{tag, ok, error});
  }
  tags_.clear();
  size_ = 0;
}

void GetSet::abandon(mpi::Window& window) noexcept {
  for (const auto& entry : tags_) (void)window.flush(entry.first);
  tags_.clear();
  size_ = 0;
}

}  // namespace tensorhub::transport
