// `mpi_rma` backend: one MPI window per hub over the job's communicator, created once at join
// (the only collective) and opened with a single MPI_Win_lock_all epoch for the hub's lifetime,
// so that publish and relay need no collective.
// Reads (MpiRmaOptions::read_mode, TENSORHUB_MPI_READ):
//  * get_flush (default): post() starts an MPI_Get; poll() completes every read posted so far
//    with one MPI_Win_flush per target (get_set.hpp). Measured with Open MPI 4.1.4 + osc ucx on
//    one host (share/doc/benchmarks.md "mpi_rma read modes"): Get + flush on the MPI_Win_allocate
//    pool reads near memcpy speed even while the holder sleeps outside MPI, where osc ucx
//    completes each MPI_Rget with a fence and a fetch-and-add on the target's window state that
//    waits for the holder to call into MPI. poll() still never waits for a new read, a peer's
//    MPI call or a lock: the flush returns once the bytes already posted (at most the engine's
//    reads in flight, e.g. 8 x 4 MiB, a few ms at memory speed) have moved. The flush cannot be
//    tested without blocking (MPI has no MPI_Win_test for passive target), so the cost is taken
//    once per poll and batch, not per read. Across hosts, where osc ucx may emulate a get with
//    active messages, the holder's progress thread serves it as it serves an Rget.
//  * rget: MPI_Rget, completed with MPI_Testsome (request_set.hpp); poll() returns at once.
//    Always used by the fault-tolerant mode: a read of a dead rank must complete as failed while
//    the others go on, which needs a request per read (a flush of a dead rank would not return).
// Three window modes, chosen collectively at construction:
//  * pool (pool_bytes > 0, the default mode of the hub): MPI_Win_allocate of a per-rank pool;
//    tensors to publish or pull into are allocated from it (Hub::allocate). Fastest, and the
//    only kind that works reliably with Open MPI 4.1.x when several ranks expose memory.
//  * dynamic (pool_bytes == 0): MPI_Win_create_dynamic + MPI_Win_attach of any user memory
//    (attachments.hpp). Open MPI 4.1.4's osc ucx and osc rdma mishandle non-uniform
//    attach/detach across ranks (crashes, EFAULT; fixed in Open MPI 5, open-mpi/ompi#10591):
//    use only on a fixed MPI.
//  * fault-tolerant (ULFM on: mpirun --with-ft ulfm; pool mode; MPI_THREAD_MULTIPLE;
//    TENSORHUB_MPI_FT not off): a pool in a FaultTolerantWindow (ft_window.hpp). Reads of a rank
//    that MPIX_Comm_get_failed reports complete as failed (the pull engine reassigns them to
//    other holders); the progress thread of every survivor then repairs the window on the shrunk
//    communicator, so endpoints and descriptors stay valid.
// See README "Window kinds" and "Failure model". Without ULFM an Rget on a dead rank hangs.
// Settings: MpiRmaOptions (options.hpp, from the environment).
#pragma once

#include <mpi.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "attachments.hpp"
#include "ft_window.hpp"
#include "get_set.hpp"
#include "options.hpp"
#include "pool.hpp"
#include "request_set.hpp"
#include "tensorhub/mpi/mpi.hpp"
#include "tensorhub/mpi/window.hpp"
#include "tensorhub/transport/transport.hpp"

namespace tensorhub::transport {

class MpiRmaTransport final : public Transport {
 public:
  // Collective over `comm`. `job_tag` must be the same on all ranks and differ between jobs.
  MpiRmaTransport(MPI_Comm comm, std::string job_tag, std::uint64_t pool_bytes,
                  MpiRmaOptions options = MpiRmaOptions::from_env());
  ~MpiRmaTransport() override;

  std::string_view name() const override { return "mpi_rma"; }
  const std::string& endpoint() const override { return endpoint_; }
  bool reaches(std::string_view endpoint) const override;
  std::unique_ptr<Exposure> expose(std::span<const MemoryRange> ranges) override;
  // Host memory; with a pool only memory inside it (the dynamic window takes any).
  bool can_expose(const MemoryRange& range) const override;
  // Scattered reads: one MPI_Rget with an hvector / hindexed origin datatype.
  bool can_scatter(std::string_view endpoint, std::string_view) const override { return reaches(endpoint); }
  void post(const ReadOp& op) override;
  void poll(std::vector<Completion>& out) override;
  std::size_t in_flight() const override;

  // Collective: ends the access epoch and frees the window. Called by the destructor otherwise.
  void close() override;
  void* allocate(std::uint64_t bytes) override;
  void deallocate(void* p) override;
  bool job_barrier() override;

  // Is the fault-tolerant (ULFM) mode on (see the top of this file)?
  bool fault_tolerant() const { return ft_.has_value(); }
  // How reads are issued: options().read_mode, or kRget in the fault-tolerant mode.
  MpiReadMode read_mode() const { return ft_ ? MpiReadMode::kRget : options_.read_mode; }

 private:
  friend class MpiExposure;
  int target_rank(std::string_view endpoint) const;
  void start_progress_thread(std::chrono::microseconds period);
  void stop_progress_thread();

  MpiRmaOptions options_;
  std::string prefix_;  // "mpi_rma:<job_tag>:"
  std::string endpoint_;
  mpi::Window window_;                     // pool and dynamic modes; declared before attached_: outlives it
  std::optional<FaultTolerantWindow> ft_;  // fault-tolerant mode
  std::optional<Pool> pool_;               // pool and fault-tolerant modes
  Attachments attached_;                   // dynamic mode
  std::vector<std::uint64_t> pool_bytes_;  // per rank (0: dynamic), gathered at construction
  // mu_ guards reads_, gets_ and failed_posts_: in_flight() may be asked from any thread.
  mutable std::mutex mu_;
  RequestSet reads_;                      // rget mode
  GetSet gets_;                           // get_flush mode
  std::vector<Completion> failed_posts_;  // reads of dead ranks, reported by the next poll
  // Optional (MpiRmaOptions::progress_period > 0): drives MPI progress while this rank's thread
  // waits elsewhere (a holder blocked in unpublish must still serve the reads it waits for; osc
  // components that are not truly one-sided need the target to call into MPI). In the
  // fault-tolerant mode it also runs the repair.
  mpi::Comm progress_comm_;
  std::atomic<bool> stop_progress_{false};
  std::atomic<std::size_t> reads_in_flight_{0};
  std::thread progress_;
};

}  // namespace tensorhub::transport
