#include "attachments.hpp"

#include <iterator>
#include <string>

#include "tensorhub/core/error.hpp"

namespace tensorhub::transport {

std::uint64_t Attachments::attach(const mpi::Window& window, std::uint64_t begin, std::uint64_t end) {
  auto it = attached_.upper_bound(begin);
  if (it != attached_.begin()) {
    auto prev = std::prev(it);
    if (prev->second.end >= end) {  // already attached (e.g. the same arena published again)
      ++prev->second.refs;
      return prev->first;
    }
    if (prev->second.end > begin) it = prev;
  }
  if (it != attached_.end() && it->first < end) {
    throw UserError("mpi_rma: memory to expose partly overlaps memory exposed earlier (unpublish it first)");
  }
  if (attached_.size() >= max_attach_) {
    throw UserError("mpi_rma: more than " + std::to_string(max_attach_) +
                    " separate memory regions exposed; allocate a version's tensors from one arena, or "
                    "raise TENSORHUB_MPI_MAX_ATTACH with --mca osc rdma --mca osc_rdma_max_attach N");
  }
  Attached a;
  a.end = end;
  a.refs = 1;
  a.attachment = std::make_unique<mpi::Attachment>(window, reinterpret_cast<void*>(begin), end - begin);
  attached_.emplace(begin, std::move(a));
  return begin;
}

void Attachments::detach(std::uint64_t key) noexcept {
  const auto it = attached_.find(key);
  if (it != attached_.end() && --it->second.refs == 0) attached_.erase(it);
}

}  // namespace tensorhub::transport
