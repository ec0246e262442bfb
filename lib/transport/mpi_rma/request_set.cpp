#include "request_set.hpp"

#include <algorithm>

namespace tensorhub::transport {

int RequestSet::test(std::vector<Completion>& out) {
  if (reads_.empty()) return MPI_SUCCESS;
  scratch_.resize(reads_.size());
  for (std::size_t i = 0; i < reads_.size(); ++i) scratch_[i] = reads_[i].request;
  indices_.resize(reads_.size());
  int count = 0;
  const int rc =
      MPI_Testsome(static_cast<int>(scratch_.size()), scratch_.data(), &count, indices_.data(), MPI_STATUSES_IGNORE);
  if (rc != MPI_SUCCESS || count == MPI_UNDEFINED || count == 0) return rc;
  for (int i = 0; i < count; ++i)
    out.push_back(Completion{reads_[static_cast<std::size_t>(indices_[i])].tag, true, {}});
  // MPI_Testsome set the finished requests to MPI_REQUEST_NULL.
  for (std::size_t i = 0; i < reads_.size(); ++i) reads_[i].request = scratch_[i];
  std::erase_if(reads_, [](const PendingRead& r) { return r.request == MPI_REQUEST_NULL; });
  return rc;
}

void RequestSet::fail_reads_of(const std::vector<bool>& dead, const std::string& why, std::vector<Completion>& out) {
  std::erase_if(reads_, [&](const PendingRead& r) {
    const auto t = static_cast<std::size_t>(r.target);
    if (t >= dead.size() || !dead[t]) return false;
    out.push_back(Completion{r.tag, false, "rank " + std::to_string(r.target) + why});
    return true;
  });
}

void RequestSet::wait_all() noexcept {
  for (auto& r : reads_) MPI_Wait(&r.request, MPI_STATUS_IGNORE);
  reads_.clear();
}

}  // namespace tensorhub::transport
