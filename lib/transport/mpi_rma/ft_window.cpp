// FaultTolerantWindow (ft_window.hpp): failed reads, communicator repair, fault-aware barrier.
//
// Protocol (every survivor does the same, so the collectives match):
//   1. a read of a rank that MPIX_Comm_get_failed reports completes as failed (the transport's
//      poll, through dead_ranks()); the pull engine tells the coordinator and reads the chunk
//      from another holder;
//   2. the progress thread of each rank sees the failure (or the revoke sent by a rank that saw
//      it first), revokes the job communicator, shrinks it, creates a window over the same pool
//      memory on the shrunk communicator and swaps it in. Every survivor calls shrink exactly
//      once per failure seen, so a rank that is already waiting in shrink is joined by the
//      others as soon as the revoke reaches them;
//   3. barrier() is an MPI_Ibarrier polled together with step 2: a failure during the barrier
//      abandons it, repairs, and starts again on the new communicator.
// Only the progress thread (or, after it stopped, barrier()) calls repair(), so comm_ changes
// on one thread; mu_ keeps the pulling thread's rget() and dead_ranks() off the swap.
#include "ft_window.hpp"

#include <string>
#include <thread>

#include "tensorhub/core/error.hpp"
#include "tensorhub/core/log.hpp"
#include "tensorhub/mpi/ulfm.hpp"

namespace tensorhub::transport {
namespace {

double ms_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

std::string join_ranks(const std::vector<int>& ranks) {
  std::string out;
  for (const int r : ranks) out += (out.empty() ? "" : ",") + std::to_string(r);
  return out;
}

}  // namespace

FaultTolerantWindow::FaultTolerantWindow(MPI_Comm comm, std::uint64_t pool_bytes)
    : bytes_((pool_bytes + 4095) / 4096 * 4096) {
  memory_.reset(std::aligned_alloc(4096, bytes_));
  if (!memory_) throw TransportError("mpi_rma: cannot allocate a pool of " + std::to_string(bytes_) + " bytes");
  origin_comm_ = mpi::Comm::duplicate(comm);
  comm_ = mpi::Comm::duplicate(comm);
  const int size = comm_.size();
  for (int r = 0; r < size; ++r) rank_of_.push_back(r);
  dead_.assign(static_cast<std::size_t>(size), false);
  window_ = mpi::Window::create(comm_.get(), memory_.get(), bytes_);
  window_.lock_all();
}

std::optional<MPI_Request> FaultTolerantWindow::rget(void* dst, std::size_t bytes, int target, MPI_Aint disp,
                                                     MPI_Datatype origin) {
  std::lock_guard lock(mu_);
  if (target < 0 || static_cast<std::size_t>(target) >= rank_of_.size()) {
    throw TransportError("mpi_rma: rank " + std::to_string(target) + " is outside this job");
  }
  const int now = rank_of_[static_cast<std::size_t>(target)];
  if (now < 0 || dead_[static_cast<std::size_t>(target)]) return std::nullopt;
  return window_.rget(dst, bytes, now, disp, origin);
}

std::vector<bool> FaultTolerantWindow::dead_ranks() {
  std::lock_guard lock(mu_);
  const auto now = std::chrono::steady_clock::now();
  if (now >= next_check_) {
    next_check_ = now + std::chrono::milliseconds(1);
    for (const int r : mpi::translate_ranks(comm_.get(), mpi::failed_ranks(comm_.get()), origin_comm_.get()))
      mark_dead(r);
  }
  return dead_;
}

bool FaultTolerantWindow::failure_pending() {
  std::lock_guard lock(mu_);
  return !mpi::failed_ranks(comm_.get()).empty() || mpi::is_revoked(comm_.get());
}

void FaultTolerantWindow::mark_dead(int rank) {
  if (rank == MPI_UNDEFINED || dead_[static_cast<std::size_t>(rank)]) return;
  dead_[static_cast<std::size_t>(rank)] = true;
  const double unix_s = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  Logger("mpi_rma").info("ULFM: rank " + std::to_string(rank) + " of the job reported failed at " +
                         std::to_string(unix_s) + "; its reads go to other holders");
}

void FaultTolerantWindow::repair() {
  const auto t0 = std::chrono::steady_clock::now();
  MPI_Comm old = MPI_COMM_NULL;
  std::vector<int> failed;
  {
    std::lock_guard lock(mu_);
    old = comm_.get();
    failed = mpi::translate_ranks(old, mpi::failed_ranks(old), origin_comm_.get());
    for (const int r : failed) mark_dead(r);  // whichever thread sees a failure first says so
  }
  // Collectives over the survivors, without mu_: the pulling thread keeps polling meanwhile.
  if (!mpi::is_revoked(old)) mpi::revoke(old);
  mpi::Comm next = mpi::shrink(old);
  const double shrink_ms = ms_since(t0);
  const auto t1 = std::chrono::steady_clock::now();
  mpi::Window window = mpi::Window::create(next.get(), memory_.get(), bytes_);
  window.lock_all();
  const double window_ms = ms_since(t1);
  std::vector<int> all(rank_of_.size());
  for (std::size_t r = 0; r < all.size(); ++r) all[r] = static_cast<int>(r);
  const auto now_rank = mpi::translate_ranks(origin_comm_.get(), all, next.get());
  const int survivors = next.size();
  std::vector<int> gone;  // left out by this shrink (its own poll may have seen them first)
  {
    std::lock_guard lock(mu_);
    for (std::size_t r = 0; r < now_rank.size(); ++r) {
      const int rank = now_rank[r] == MPI_UNDEFINED ? -1 : now_rank[r];
      if (rank < 0 && rank_of_[r] >= 0) gone.push_back(static_cast<int>(r));
      rank_of_[r] = rank;
      if (rank < 0) mark_dead(static_cast<int>(r));
    }
    // Reads posted on the old window keep going (a live target still answers them); reads of
    // the dead ranks are failed by the next poll.
    retired_windows_.push_back(std::move(window_));
    window_ = std::move(window);
    retired_comms_.push_back(std::move(comm_));
    comm_ = std::move(next);
  }
  if (gone.empty()) gone = failed;
  Logger("mpi_rma").info("ULFM: rank(s) " + (gone.empty() ? std::string("?") : join_ranks(gone)) +
                         " of the job failed; survivors shrank the job communicator to " + std::to_string(survivors) +
                         " ranks in " + std::to_string(shrink_ms) + " ms and rebuilt the window in " +
                         std::to_string(window_ms) + " ms");
}

void FaultTolerantWindow::barrier() {
  for (;;) {
    if (failure_pending()) {
      repair();
      continue;
    }
    MPI_Request req = MPI_REQUEST_NULL;
    mpi::check(MPI_Ibarrier(comm_.get(), &req), "MPI_Ibarrier (job barrier)");
    for (;;) {
      int done = 0;
      const int rc = MPI_Test(&req, &done, MPI_STATUS_IGNORE);
      if (rc == MPI_SUCCESS && done) return;
      if (rc != MPI_SUCCESS && !mpi::is_process_failure(rc)) mpi::check(rc, "MPI_Test (job barrier)");
      if (rc != MPI_SUCCESS || failure_pending()) break;  // abandon it, repair, barrier again
      std::this_thread::sleep_for(std::chrono::microseconds(500));
    }
  }
}

}  // namespace tensorhub::transport
