// `mpi_rma` backend: one MPI window per hub over the job's communicator, created once at join
// (the only collective) and opened with a single MPI_Win_lock_all epoch for the hub's lifetime,
// so that publish and relay need no collective. A read = MPI_Rget, completed with MPI_Testsome.
// Two window kinds:
//  * pool (pool_bytes > 0, the default mode of the hub): MPI_Win_allocate of a per-rank pool;
//    tensors to publish or pull into are allocated from it (Hub::allocate). Fastest, and the
//    only kind that works reliably with Open MPI 4.1.x when several ranks expose memory.
//  * dynamic (pool_bytes == 0): MPI_Win_create_dynamic + MPI_Win_attach of any user memory.
//    Open MPI 4.1.4's osc ucx and osc rdma mishandle non-uniform attach/detach across ranks
//    (crashes, EFAULT; fixed in Open MPI 5, open-mpi/ompi#10591): use only on a fixed MPI.
// See README "Window kinds" for the measurements.
// Failure model: without ULFM, an Rget on a dead rank hangs inside MPI (README "Failure model").
#pragma once

#include <mpi.h>

#include <atomic>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "pool.hpp"
#include "tensorhub/mpi/mpi.hpp"
#include "tensorhub/mpi/window.hpp"
#include "tensorhub/transport/transport.hpp"

namespace tensorhub::transport {

class MpiRmaTransport final : public Transport {
 public:
  // Collective over `comm`. `job_tag` must be the same on all ranks and differ between jobs.
  MpiRmaTransport(MPI_Comm comm, std::string job_tag, std::uint64_t pool_bytes);
  ~MpiRmaTransport() override;

  std::string_view name() const override { return "mpi_rma"; }
  const std::string& endpoint() const override { return endpoint_; }
  bool reaches(std::string_view endpoint) const override;
  std::unique_ptr<Exposure> expose(std::span<const MemoryRange> ranges) override;
  void post(const ReadOp& op) override;
  void poll(std::vector<Completion>& out) override;
  std::size_t in_flight() const override { return requests_.size(); }

  // Collective: ends the access epoch and frees the window. Called by the destructor otherwise.
  void close() override;
  void* allocate(std::uint64_t bytes) override;
  void deallocate(void* p) override;

 private:
  friend class MpiExposure;
  struct Attached {
    std::uint64_t end = 0;
    std::uint32_t refs = 0;
    std::unique_ptr<mpi::Attachment> attachment;
  };
  int target_rank(std::string_view endpoint) const;
  // Attaches [begin, end) or reuses an attachment that contains it; returns its key.
  std::uint64_t attach(std::uint64_t begin, std::uint64_t end);
  void detach(std::uint64_t key) noexcept;

  std::string prefix_;  // "mpi_rma:<job_tag>:"
  std::string endpoint_;
  std::size_t max_attach_;
  mpi::Window window_;                          // declared before attached_: outlives it
  std::optional<Pool> pool_;                    // pool mode
  std::map<std::uint64_t, Attached> attached_;  // by begin address
  std::vector<MPI_Request> requests_;
  std::vector<std::uint64_t> tags_;
  std::vector<int> indices_;
  // Optional (TENSORHUB_MPI_PROGRESS_US > 0): drives MPI progress while this rank's thread waits elsewhere (a holder
  // blocked in unpublish must still serve the reads it waits for; osc components that are not truly one-sided need the
  // target to call into MPI).
  mpi::Comm progress_comm_;
  std::atomic<bool> stop_progress_{false};
  std::atomic<std::size_t> reads_in_flight_{0};
  std::thread progress_;
};

}  // namespace tensorhub::transport
