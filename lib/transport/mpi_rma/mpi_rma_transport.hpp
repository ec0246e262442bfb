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
// Failure model (README "Failure model"): without ULFM, an Rget on a dead rank hangs inside MPI.
// With ULFM on (mpirun --with-ft ulfm; pool mode; MPI_THREAD_MULTIPLE) the transport is
// fault-tolerant: the pool is this transport's own memory exposed with MPI_Win_create; reads of
// a rank that MPIX_Comm_get_failed reports are completed as failed (the pull engine reassigns
// them to other holders); the progress thread of every survivor then revokes the job
// communicator, shrinks it and creates a new window over the same pool memory, so endpoints and
// descriptors stay valid (endpoints name ranks of the original communicator). Old windows are
// abandoned, never freed (MPI_Win_free over a dead rank may hang). mpi_rma_repair.cpp.
#pragma once

#include <mpi.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
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
  std::size_t in_flight() const override { return requests_.size() + failed_posts_.size(); }

  // Collective: ends the access epoch and frees the window. Called by the destructor otherwise.
  void close() override;
  void* allocate(std::uint64_t bytes) override;
  void deallocate(void* p) override;
  bool job_barrier() override;

  // Is the ULFM mode on (see the top of this file)?
  bool fault_tolerant() const { return ft_; }

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

  struct FreeDeleter {
    void operator()(void* p) const { std::free(p); }
  };
  void start_progress_thread(std::chrono::microseconds period);
  // ULFM mode (mpi_rma_repair.cpp). Caller holds mu_ for fail_dead_reads().
  bool failure_pending();
  void repair();
  void fail_dead_reads(std::vector<Completion>& out);
  void mark_dead(int rank);  // caller holds mu_; logs the first time a rank is known dead
  // Drops the requests set to MPI_REQUEST_NULL (with their tags and targets).
  void compact_requests();

  std::string prefix_;  // "mpi_rma:<job_tag>:"
  std::string endpoint_;
  std::size_t max_attach_;
  mpi::Window window_;                          // declared before attached_: outlives it
  std::optional<Pool> pool_;                    // pool mode
  std::map<std::uint64_t, Attached> attached_;  // by begin address
  std::vector<MPI_Request> requests_;
  std::vector<std::uint64_t> tags_;
  std::vector<int> targets_;  // original rank each request reads from
  std::vector<int> indices_;
  // ULFM mode. mu_ guards window_, comm_, rank_of_, dead_ and the request vectors against the
  // progress thread's repair.
  bool ft_ = false;
  std::mutex mu_;
  std::unique_ptr<void, FreeDeleter> pool_memory_;
  std::uint64_t pool_bytes_ = 0;
  mpi::Comm origin_comm_;                 // the job communicator as joined (endpoint numbering)
  mpi::Comm comm_;                        // its live ranks now
  std::vector<int> rank_of_;              // original rank -> rank in comm_, -1 if dead
  std::vector<bool> dead_;                // original ranks known dead
  std::vector<Completion> failed_posts_;  // reads of dead ranks, reported by the next poll
  std::vector<mpi::Window> retired_windows_;
  std::vector<mpi::Comm> retired_comms_;
  std::chrono::steady_clock::time_point next_check_{};
  // Optional (TENSORHUB_MPI_PROGRESS_US > 0): drives MPI progress while this rank's thread waits elsewhere (a holder
  // blocked in unpublish must still serve the reads it waits for; osc components that are not truly one-sided need the
  // target to call into MPI).
  mpi::Comm progress_comm_;
  std::atomic<bool> stop_progress_{false};
  std::atomic<std::size_t> reads_in_flight_{0};
  std::thread progress_;
};

}  // namespace tensorhub::transport
