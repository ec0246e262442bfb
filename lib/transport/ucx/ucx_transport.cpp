#include "ucx/ucx_transport.hpp"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <new>
#include <string>

#include "am_protocol.hpp"
#include "codec.hpp"
#include "core.hpp"
#include "exposure.hpp"
#include "progress_thread.hpp"
#include "reads.hpp"
#include "src/host_only.hpp"
#include "tcp_segments.hpp"
#include "tensorhub/core/env.hpp"
#include "tensorhub/core/error.hpp"

namespace tensorhub::transport {
namespace {

constexpr std::uint64_t kPage = 4096;

std::string default_label() {
  std::array<char, 256> host{};
  if (gethostname(host.data(), host.size() - 1) != 0) host[0] = '\0';
  return std::string(host.data()) + "/" + std::to_string(getpid());
}

}  // namespace

UcxOptions UcxOptions::from_env() {
  UcxOptions o;
  if (const auto ms = env::millis("TENSORHUB_UCX_DEADLINE_MS", 1)) o.deadline = *ms;
  if (const auto read = env::choice("TENSORHUB_UCX_READ", {"auto", "get", "am"})) {
    o.read = *read == "get" ? UcxRead::kGet : *read == "am" ? UcxRead::kAm : UcxRead::kAuto;
  }
  if (const auto piece = env::bytes("TENSORHUB_UCX_AM_PIECE", 4096, ucx::kAmMaxPiece)) o.am_piece = *piece;
  return o;
}

UcxTransport::UcxTransport(UcxOptions options) : options_(std::move(options)), core_(std::make_shared<ucx::Core>()) {
  if (options_.label.empty()) options_.label = default_label();
  if (options_.deadline.count() <= 0) throw UserError("ucx: the read deadline must be positive");
  endpoint_ = ucx::encode_endpoint(options_.label, core_->worker.address());
  cuda_aware_ = core_->context.supports(UCS_MEMORY_TYPE_CUDA);
  if (options_.am_piece == 0) options_.am_piece = ucx::default_am_piece();
  if (options_.am_piece > ucx::kAmMaxPiece || options_.am_window == 0) {
    throw UserError("ucx: am_piece must be 0 (one TCP segment) or 1.." + std::to_string(ucx::kAmMaxPiece) +
                    " bytes, and am_window > 0");
  }
  reads_ = std::make_unique<ucx::Reads>(core_->worker, options_);
  if (options_.progress_thread) progress_ = std::make_unique<ucx::ProgressThread>(core_->worker, core_->mutex);
}

UcxTransport::~UcxTransport() {
  progress_.reset();
  const std::lock_guard lock(core_->mutex);
  reads_.reset();  // closes the endpoints while the worker exists
}

bool UcxTransport::reaches(std::string_view endpoint) const {
  if (!ucx::looks_like_endpoint(endpoint)) return false;
  try {
    (void)ucx::decode_endpoint(endpoint);
    return true;
  } catch (const TransportError&) {
    return false;
  }
}

std::unique_ptr<Exposure> UcxTransport::expose(std::span<const MemoryRange> ranges) {
  return ucx::expose_ranges(core_, ranges);
}

bool UcxTransport::can_expose(const MemoryRange& range) const {
  return range.memory == MemoryKind::kHost || (range.memory == MemoryKind::kCuda && cuda_aware_);
}

bool UcxTransport::can_read_into(std::string_view, std::string_view, MemoryKind dst) const {
  return dst == MemoryKind::kHost || (dst == MemoryKind::kCuda && cuda_aware_);
}

void UcxTransport::post(const ReadOp& op) {
  if (!cuda_aware_) require_host_destination(op, "ucx (not CUDA-aware)");
  require_contiguous(op, "ucx");
  const std::lock_guard lock(core_->mutex);
  reads_->post(op);
}

void UcxTransport::poll(std::vector<Completion>& out) {
  const std::lock_guard lock(core_->mutex);
  reads_->poll(out);
}

std::size_t UcxTransport::in_flight() const {
  const std::lock_guard lock(core_->mutex);
  return reads_->in_flight();
}

UcxStats UcxTransport::stats() const {
  const std::lock_guard lock(core_->mutex);
  const auto served = core_->server.stats();
  UcxStats s;
  s.gets = reads_->gets_posted();
  s.am_reads = reads_->am_posted();
  s.am_served = served.served;
  s.am_refused = served.refused;
  s.am_dropped = served.dropped;
  s.am_replies_in_flight = served.in_flight;
  s.am_piece = options_.am_piece;
  return s;
}

void* UcxTransport::allocate(std::uint64_t bytes) {
  const std::uint64_t rounded = (std::max<std::uint64_t>(bytes, 1) + kPage - 1) / kPage * kPage;
  void* p = std::aligned_alloc(kPage, rounded);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}

void UcxTransport::deallocate(void* p) { std::free(p); }

}  // namespace tensorhub::transport
