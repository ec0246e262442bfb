#include "mpi_rma_transport.hpp"

#include <algorithm>
#include <charconv>
#include <string>
#include <utility>

#include "read_bounds.hpp"
#include "src/coalesce.hpp"
#include "src/host_only.hpp"
#include "tensorhub/core/error.hpp"
#include "tensorhub/core/log.hpp"
#include "tensorhub/mpi/datatype.hpp"
#include "tensorhub/mpi/ulfm.hpp"
#include "tensorhub/transport/descriptor.hpp"

namespace tensorhub::transport {
namespace {

// Gap up to which neighbouring ranges share one attachment.
constexpr std::uint64_t kMaxGap = 64 * 1024;

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
    for (const auto k : keys_) transport_.attached_.detach(k);
  }
  MpiExposure(const MpiExposure&) = delete;
  MpiExposure& operator=(const MpiExposure&) = delete;
  const std::vector<std::string>& descriptors() const override { return descriptors_; }

 private:
  MpiRmaTransport& transport_;
  std::vector<std::uint64_t> keys_;
  std::vector<std::string> descriptors_;
};

MpiRmaTransport::MpiRmaTransport(MPI_Comm comm, std::string job_tag, std::uint64_t pool_bytes, MpiRmaOptions options)
    : options_(options), prefix_("mpi_rma:" + std::move(job_tag) + ":"), attached_(options.max_attach) {
  int rank = 0;
  mpi::check(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
  endpoint_ = prefix_ + std::to_string(rank);
  // Every rank must agree on the window mode (a collective choice).
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
  auto period = options_.progress_period;
  // Fault-tolerant mode: needs ULFM on, a pool (its memory must outlive windows) and a progress
  // thread (it runs the repair). The same on every rank (the inputs are job-wide), checked with
  // an allreduce anyway: the window mode is collective.
  int want_ft =
      (mpi::ulfm_support().enabled && any_pooled && level >= MPI_THREAD_MULTIPLE && options_.fault_tolerance) ? 1 : 0;
  int all_ft = 0;
  mpi::check(MPI_Allreduce(&want_ft, &all_ft, 1, MPI_INT, MPI_MIN, comm), "MPI_Allreduce(ULFM mode)");
  if (all_ft != 0) {
    ft_.emplace(comm, pool_bytes);
    pool_.emplace(ft_->memory(), pool_bytes);
    if (rank == 0)
      Logger("mpi_rma").info("ULFM mode: dead ranks are detected and the window is rebuilt on the survivors");
  } else if (any_pooled) {
    void* base = nullptr;
    window_ = mpi::Window::allocate(comm, pool_bytes, &base);
    pool_.emplace(base, pool_bytes);
    window_.lock_all();
  } else {
    window_ = mpi::Window::create_dynamic(comm);
    warn_if_dynamic_windows_are_unreliable(rank);
    window_.lock_all();
  }
  // Every rank's pool (0: dynamic window), to check the descriptors readers receive.
  int ranks = 0;
  mpi::check(MPI_Comm_size(comm, &ranks), "MPI_Comm_size");
  const std::uint64_t mine = pool_ ? pool_->capacity() : 0;
  pool_bytes_.assign(static_cast<std::size_t>(ranks), 0);
  mpi::check(MPI_Allgather(&mine, 1, MPI_UINT64_T, pool_bytes_.data(), 1, MPI_UINT64_T, comm),
             "MPI_Allgather(pool sizes)");
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
      // Fault-tolerant mode: every ~5 ms, look for dead ranks or a revoked communicator and repair.
      if (ft_ && ++tick % 5 == 0) {
        try {
          if (ft_->failure_pending()) ft_->repair();
        } catch (const std::exception& e) {
          Logger("mpi_rma").error(std::string("repair after a process failure failed (will retry): ") + e.what());
        }
      }
      std::this_thread::sleep_for(period);
    }
  });
}

void MpiRmaTransport::stop_progress_thread() {
  stop_progress_ = true;
  if (progress_.joinable()) progress_.join();
}

MpiRmaTransport::~MpiRmaTransport() {
  stop_progress_thread();
  // Outstanding reads are completed before the window goes (never the case in normal use: the
  // transfer engine drains its reads before returning). Fault-tolerant mode: one may read a
  // dead rank; abandoned.
  if (!ft_) {
    reads_.wait_all();
    gets_.abandon(window_);
  }
}

void MpiRmaTransport::close() {
  {
    std::lock_guard lock(mu_);
    require(reads_.empty() && gets_.empty(), "mpi_rma transport closed with reads in flight");
  }
  stop_progress_thread();
  attached_.clear();  // detach before the window goes
  // Fault-tolerant mode: a collective free could hang on a rank that dies now; the window is
  // abandoned (MPI_Finalize releases it) after job_barrier() made sure no survivor still reads.
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
  if (r.ec != std::errc{} || r.ptr != digits.data() + digits.size() || rank < 0)
    throw TransportError("malformed mpi_rma endpoint '" + std::string(endpoint) + "'");
  return rank;
}

void* MpiRmaTransport::allocate(std::uint64_t bytes) {
  if (!pool_) return Transport::allocate(bytes);
  return pool_->allocate(bytes);
}

void MpiRmaTransport::deallocate(void* p) {
  if (!pool_) return Transport::deallocate(p);
  pool_->deallocate(p);
}

bool MpiRmaTransport::can_expose(const MemoryRange& range) const {
  if (range.memory != MemoryKind::kHost) return false;
  return !pool_ || pool_->contains(range.base, range.bytes);
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
    for (const auto& s : coalesce(spans, kMaxGap)) keys.push_back(attached_.attach(window_, s.begin, s.end));
  } catch (...) {
    for (const auto k : keys) attached_.detach(k);
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
  require_host_destination(op, "mpi_rma");
  const int target = target_rank(op.endpoint);
  // Checked against the holder's registered pool before MPI sees it (a bad one fails this read).
  const auto disp = static_cast<MPI_Aint>(
      checked_displacement(decode_region(op.descriptor), op.offset, op.length, target, pool_bytes_, op.endpoint));
  // A scattered read: one Rget whose origin datatype places the pieces (relative to the lowest).
  void* dst = op.dst;
  mpi::Datatype origin;
  if (!op.pieces.empty()) {
    require_pieces_cover(op, "mpi_rma");
    std::uint64_t low = op.pieces.front().offset;
    for (const auto& p : op.pieces) low = std::min(low, p.offset);
    std::vector<std::uint64_t> offsets;
    std::vector<std::uint64_t> lengths;
    offsets.reserve(op.pieces.size());
    lengths.reserve(op.pieces.size());
    for (const auto& p : op.pieces) {
      offsets.push_back(p.offset - low);
      lengths.push_back(p.length);
    }
    dst = static_cast<unsigned char*>(op.dst) + low;
    origin = mpi::Datatype::byte_pieces(offsets, lengths);
  }
  std::lock_guard lock(mu_);
  if (ft_) {
    const auto request = ft_->rget(dst, op.length, target, disp, origin.get());
    if (!request) {
      failed_posts_.push_back(
          Completion{op.tag, false, "rank " + std::to_string(target) + " of the MPI job has failed"});
      return;
    }
    reads_.add(PendingRead{*request, op.tag, target});
  } else if (options_.read_mode == MpiReadMode::kGetFlush) {
    gets_.start(window_, dst, op.length, target, disp, op.tag, origin.get());
  } else {
    reads_.add(PendingRead{window_.rget(dst, op.length, target, disp, origin.get()), op.tag, target});
  }
  reads_in_flight_.store(reads_.size() + gets_.size(), std::memory_order_relaxed);
}

void MpiRmaTransport::poll(std::vector<Completion>& out) {
  std::lock_guard lock(mu_);
  for (auto& c : failed_posts_) out.push_back(std::move(c));
  failed_posts_.clear();
  if (!gets_.empty()) {
    gets_.complete(window_, out);
    reads_in_flight_.store(reads_.size(), std::memory_order_relaxed);
  }
  if (reads_.empty()) return;
  if (ft_) reads_.fail_reads_of(ft_->dead_ranks(), " of the MPI job failed (ULFM)", out);
  const int rc = reads_.test(out);
  // Fault-tolerant mode: an error here is a failed process; the next poll fails its reads.
  if (!(ft_ && rc != MPI_SUCCESS)) mpi::check(rc, "MPI_Testsome on RMA reads");
  reads_in_flight_.store(reads_.size(), std::memory_order_relaxed);
}

std::size_t MpiRmaTransport::in_flight() const {
  std::lock_guard lock(mu_);
  return reads_.size() + gets_.size() + failed_posts_.size();
}

bool MpiRmaTransport::job_barrier() {
  if (!ft_) return false;
  // The repair runs here from now on (a progress thread in shrink finishes first: the others
  // join it as the revoke reaches them).
  stop_progress_thread();
  ft_->barrier();
  return true;
}

}  // namespace tensorhub::transport
