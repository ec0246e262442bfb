#include "mpi_rma_transport.hpp"

#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <string>
#include <utility>

#include "coalesce.hpp"
#include "tensorhub/core/error.hpp"
#include "tensorhub/core/log.hpp"
#include "tensorhub/mpi/mpi.hpp"
#include "tensorhub/mpi/ulfm.hpp"
#include "tensorhub/transport/descriptor.hpp"

namespace tensorhub::transport {
namespace {

// Gap up to which neighbouring ranges share one attachment.
constexpr std::uint64_t kMaxGap = 64 * 1024;

std::size_t max_attach_from_env() {
  const char* v = std::getenv("TENSORHUB_MPI_MAX_ATTACH");
  return v ? static_cast<std::size_t>(std::strtoul(v, nullptr, 10)) : 30;  // osc ucx allows 32
}

// TENSORHUB_MPI_PROGRESS_US: period of the progress thread's MPI_Iprobe (default 1000; 0 = no
// thread). Open MPI's osc ucx completes an Rget only while the target calls into MPI (seen here
// even on one host), so a holder that computes or waits on the coordinator must still progress.
std::chrono::microseconds progress_period_from_env() {
  const char* v = std::getenv("TENSORHUB_MPI_PROGRESS_US");
  return std::chrono::microseconds(v ? std::strtol(v, nullptr, 10) : 1000);
}

// Open MPI before 5.0 mishandles dynamic windows with non-uniform attach/detach (README).
void warn_if_dynamic_windows_are_unreliable(int rank) {
  char version[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int len = 0;
  if (rank != 0 || MPI_Get_library_version(version, &len) != MPI_SUCCESS) return;
  const std::string v(version, static_cast<std::size_t>(len));
  if (v.find("Open MPI v4.") != std::string::npos || v.find("Open MPI v3.") != std::string::npos) {
    Logger("mpi_rma").warn(
        "dynamic MPI window on " + v.substr(0, v.find(',')) +
        ": attach/detach from several ranks is unreliable in this Open MPI; set HubOptions::pool_bytes "
        "(or TENSORHUB_POOL_BYTES) and allocate tensors with Hub::allocate");
  }
}

}  // namespace

class MpiExposure final : public Exposure {
 public:
  MpiExposure(MpiRmaTransport& t, std::vector<std::uint64_t> keys, std::vector<std::string> descriptors)
      : transport_(t), keys_(std::move(keys)), descriptors_(std::move(descriptors)) {}
  ~MpiExposure() override {
    for (const auto k : keys_) transport_.detach(k);
  }
  MpiExposure(const MpiExposure&) = delete;
  MpiExposure& operator=(const MpiExposure&) = delete;
  const std::vector<std::string>& descriptors() const override { return descriptors_; }

 private:
  MpiRmaTransport& transport_;
  std::vector<std::uint64_t> keys_;
  std::vector<std::string> descriptors_;
};

MpiRmaTransport::MpiRmaTransport(MPI_Comm comm, std::string job_tag, std::uint64_t pool_bytes)
    : prefix_("mpi_rma:" + std::move(job_tag) + ":"), max_attach_(max_attach_from_env()) {
  int rank = 0;
  mpi::check(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
  endpoint_ = prefix_ + std::to_string(rank);
  // Every rank must agree on the window kind (a collective choice).
  int pooled = pool_bytes > 0 ? 1 : 0;
  int all_pooled = 0;
  int any_pooled = 0;
  mpi::check(MPI_Allreduce(&pooled, &all_pooled, 1, MPI_INT, MPI_MIN, comm), "MPI_Allreduce(pool mode)");
  mpi::check(MPI_Allreduce(&pooled, &any_pooled, 1, MPI_INT, MPI_MAX, comm), "MPI_Allreduce(pool mode)");
  if (any_pooled && !all_pooled) {
    // Ranks that need no pool (e.g. the coordinator) still take part with a minimal one.
    pool_bytes = std::max<std::uint64_t>(pool_bytes, 4096);
  }
  int level = MPI_THREAD_SINGLE;
  mpi::check(MPI_Query_thread(&level), "MPI_Query_thread");
  auto period = progress_period_from_env();
  // ULFM mode: needs ULFM on, a pool (its memory must outlive windows) and a progress thread
  // (it runs the repair). TENSORHUB_MPI_FT=0 turns it off. The same on every rank (the
  // inputs are job-wide), checked with an allreduce anyway: the window kind is collective.
  const char* ft_env = std::getenv("TENSORHUB_MPI_FT");
  int want_ft = (mpi::ulfm_support().enabled && any_pooled && level >= MPI_THREAD_MULTIPLE &&
                 !(ft_env && std::string(ft_env) == "0"))
                    ? 1
                    : 0;
  int all_ft = 0;
  mpi::check(MPI_Allreduce(&want_ft, &all_ft, 1, MPI_INT, MPI_MIN, comm), "MPI_Allreduce(ULFM mode)");
  ft_ = all_ft != 0;
  if (ft_) {
    pool_bytes_ = (pool_bytes + 4095) / 4096 * 4096;
    pool_memory_.reset(std::aligned_alloc(4096, pool_bytes_));
    if (!pool_memory_)
      throw TransportError("mpi_rma: cannot allocate a pool of " + std::to_string(pool_bytes_) + " bytes");
    origin_comm_ = mpi::Comm::duplicate(comm);
    comm_ = mpi::Comm::duplicate(comm);
    const int size = comm_.size();
    for (int r = 0; r < size; ++r) rank_of_.push_back(r);
    dead_.assign(static_cast<std::size_t>(size), false);
    window_ = mpi::Window::create(comm_.get(), pool_memory_.get(), pool_bytes_);
    pool_.emplace(pool_memory_.get(), pool_bytes);
    if (rank == 0)
      Logger("mpi_rma").info("ULFM mode: dead ranks are detected and the window is rebuilt on the survivors");
  } else if (any_pooled) {
    void* base = nullptr;
    window_ = mpi::Window::allocate(comm, pool_bytes, &base);
    pool_.emplace(base, pool_bytes);
  } else {
    window_ = mpi::Window::create_dynamic(comm);
    warn_if_dynamic_windows_are_unreliable(rank);
  }
  window_.lock_all();
  progress_comm_ = mpi::Comm::duplicate(comm);
  if (period.count() > 0 && level < MPI_THREAD_MULTIPLE) {
    if (rank == 0) {
      Logger("mpi_rma").warn(
          "MPI was initialised without MPI_THREAD_MULTIPLE: no progress thread, so reads of this "
          "rank's memory progress only while it calls MPI (initialise with MPI_THREAD_MULTIPLE)");
    }
    period = std::chrono::microseconds(0);
  }
  if (ft_ && period.count() == 0) period = std::chrono::microseconds(1000);  // the repair runs there
  if (period.count() > 0) start_progress_thread(period);
}

void MpiRmaTransport::start_progress_thread(std::chrono::microseconds period) {
  progress_ = std::thread([this, period] {
    int tick = 0;
    while (!stop_progress_.load(std::memory_order_relaxed)) {
      // While this rank's own reads are in flight its main thread polls MPI anyway; a second
      // thread in MPI then only contends for Open MPI's locks.
      if (reads_in_flight_.load(std::memory_order_relaxed) == 0) {
        int flag = 0;
        MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, progress_comm_.get(), &flag, MPI_STATUS_IGNORE);
      }
      // ULFM mode: every ~5 ms, look for dead ranks or a revoked communicator and repair.
      if (ft_ && ++tick % 5 == 0) {
        try {
          if (failure_pending()) repair();
        } catch (const std::exception& e) {
          Logger("mpi_rma").error(std::string("repair after a process failure failed (will retry): ") + e.what());
        }
      }
      std::this_thread::sleep_for(period);
    }
  });
}

MpiRmaTransport::~MpiRmaTransport() {
  stop_progress_ = true;
  if (progress_.joinable()) progress_.join();
  // Outstanding requests are completed before the window goes (never the case in normal use:
  // the transfer engine drains its reads before returning).
  if (!requests_.empty() && !ft_) {  // (ULFM mode: one may read a dead rank; abandoned)
    MPI_Waitall(static_cast<int>(requests_.size()), requests_.data(), MPI_STATUSES_IGNORE);
  }
}

void MpiRmaTransport::close() {
  require(requests_.empty(), "mpi_rma transport closed with reads in flight");
  stop_progress_ = true;
  if (progress_.joinable()) progress_.join();
  attached_.clear();  // detach before the window goes
  // ULFM mode: a collective free could hang on a rank that dies now; the window is abandoned
  // (MPI_Finalize releases it) after job_barrier() made sure no survivor still reads.
  if (!ft_) window_.free();
}

bool MpiRmaTransport::reaches(std::string_view endpoint) const { return endpoint.starts_with(prefix_); }

int MpiRmaTransport::target_rank(std::string_view endpoint) const {
  if (!reaches(endpoint)) {
    throw TransportError("mpi_rma transport cannot reach '" + std::string(endpoint) +
                         "': it is not in this MPI job (use the ucx transport across jobs)");
  }
  int rank = -1;
  const auto digits = endpoint.substr(prefix_.size());
  const auto r = std::from_chars(digits.data(), digits.data() + digits.size(), rank);
  if (r.ec != std::errc{} || rank < 0)
    throw TransportError("malformed mpi_rma endpoint '" + std::string(endpoint) + "'");
  return rank;
}

std::uint64_t MpiRmaTransport::attach(std::uint64_t begin, std::uint64_t end) {
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
  a.attachment = std::make_unique<mpi::Attachment>(window_, reinterpret_cast<void*>(begin), end - begin);
  attached_.emplace(begin, std::move(a));
  return begin;
}

void MpiRmaTransport::detach(std::uint64_t key) noexcept {
  const auto it = attached_.find(key);
  if (it != attached_.end() && --it->second.refs == 0) attached_.erase(it);
}

void* MpiRmaTransport::allocate(std::uint64_t bytes) {
  if (!pool_) return Transport::allocate(bytes);
  return pool_->allocate(bytes);
}

void MpiRmaTransport::deallocate(void* p) {
  if (!pool_) return Transport::deallocate(p);
  pool_->deallocate(p);
}

std::unique_ptr<Exposure> MpiRmaTransport::expose(std::span<const MemoryRange> ranges) {
  if (pool_) {
    // Pool mode: memory is already in the window; the descriptor is its displacement.
    std::vector<std::string> descriptors;
    for (const auto& r : ranges) {
      if (!pool_->contains(r.base, r.bytes)) {
        throw UserError(
            "mpi_rma: memory to publish or pull into must come from Hub::allocate (this hub uses a "
            "registered pool of " +
            std::to_string(pool_->capacity()) + " bytes)");
      }
      descriptors.push_back(encode_region(pool_->offset_of(r.base), r.bytes));
    }
    return std::make_unique<MpiExposure>(*this, std::vector<std::uint64_t>{}, std::move(descriptors));
  }
  std::vector<Span> spans;
  for (const auto& r : ranges) {
    if (r.memory != MemoryKind::kHost) {
      throw UserError("mpi_rma transport: CUDA memory needs a CUDA-aware MPI (this Open MPI is not)");
    }
    const auto b = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(r.base));
    spans.push_back(Span{b, b + r.bytes});
  }
  std::vector<std::uint64_t> keys;
  try {
    for (const auto& s : coalesce(spans, kMaxGap)) keys.push_back(attach(s.begin, s.end));
  } catch (...) {
    for (const auto k : keys) detach(k);
    throw;
  }
  // With a dynamic window the displacement is the absolute address (MPI_Get_address).
  std::vector<std::string> descriptors;
  for (const auto& r : ranges) {
    MPI_Aint a = 0;
    mpi::check(MPI_Get_address(r.base, &a), "MPI_Get_address");
    descriptors.push_back(encode_region(static_cast<std::uint64_t>(a), r.bytes));
  }
  return std::make_unique<MpiExposure>(*this, std::move(keys), std::move(descriptors));
}

void MpiRmaTransport::post(const ReadOp& op) {
  const int target = target_rank(op.endpoint);
  const Region region = decode_region(op.descriptor);
  if (op.offset + op.length > region.bytes) {
    throw TransportError("read past the end of a region exposed by " + op.endpoint);
  }
  const auto disp = static_cast<MPI_Aint>(region.address + op.offset);
  std::lock_guard lock(mu_);
  int now = target;
  if (ft_) {
    if (static_cast<std::size_t>(target) >= rank_of_.size())
      throw TransportError("mpi_rma endpoint '" + op.endpoint + "' names a rank outside this job");
    now = rank_of_[static_cast<std::size_t>(target)];
    if (now < 0 || dead_[static_cast<std::size_t>(target)]) {
      failed_posts_.push_back(
          Completion{op.tag, false, "rank " + std::to_string(target) + " of the MPI job has failed"});
      return;
    }
  }
  requests_.push_back(window_.rget(op.dst, op.length, now, disp));
  tags_.push_back(op.tag);
  targets_.push_back(target);
  reads_in_flight_.store(requests_.size(), std::memory_order_relaxed);
}

void MpiRmaTransport::poll(std::vector<Completion>& out) {
  std::lock_guard lock(mu_);
  if (ft_) fail_dead_reads(out);
  if (requests_.empty()) return;
  indices_.resize(requests_.size());
  int count = 0;
  const int rc =
      MPI_Testsome(static_cast<int>(requests_.size()), requests_.data(), &count, indices_.data(), MPI_STATUSES_IGNORE);
  // ULFM mode: an error here is a failed process; fail_dead_reads() sorts it out on the next poll.
  if (!(ft_ && rc != MPI_SUCCESS)) mpi::check(rc, "MPI_Testsome on RMA reads");
  if (rc != MPI_SUCCESS || count == MPI_UNDEFINED || count == 0) return;
  for (int i = 0; i < count; ++i) out.push_back(Completion{tags_[static_cast<std::size_t>(indices_[i])], true, {}});
  compact_requests();  // MPI_Testsome set the completed ones to MPI_REQUEST_NULL
}

void MpiRmaTransport::compact_requests() {
  std::size_t w = 0;
  for (std::size_t r = 0; r < requests_.size(); ++r) {
    if (requests_[r] != MPI_REQUEST_NULL) {
      requests_[w] = requests_[r];
      tags_[w] = tags_[r];
      targets_[w] = targets_[r];
      ++w;
    }
  }
  requests_.resize(w);
  tags_.resize(w);
  targets_.resize(w);
  reads_in_flight_.store(requests_.size(), std::memory_order_relaxed);
}

}  // namespace tensorhub::transport
