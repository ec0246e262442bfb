#include "cma/cma_transport.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <new>
#include <utility>

#include "codec.hpp"
#include "generation_table.hpp"
#include "identity.hpp"
#include "reads.hpp"
#include "src/host_only.hpp"
#include "tensorhub/core/env.hpp"
#include "tensorhub/core/error.hpp"

namespace tensorhub::transport {
namespace {

constexpr std::uint64_t kPage = 4096;

class CmaExposure final : public Exposure {
 public:
  CmaExposure(std::shared_ptr<cma::GenerationTable> table, std::uint32_t slot, std::vector<std::string> descriptors)
      : table_(std::move(table)), slot_(slot), descriptors_(std::move(descriptors)) {}
  ~CmaExposure() override { table_->release(slot_); }  // readers see the withdrawal from here on
  CmaExposure(const CmaExposure&) = delete;
  CmaExposure& operator=(const CmaExposure&) = delete;
  const std::vector<std::string>& descriptors() const override { return descriptors_; }

 private:
  std::shared_ptr<cma::GenerationTable> table_;
  std::uint32_t slot_;
  std::vector<std::string> descriptors_;
};

}  // namespace

CmaOptions CmaOptions::from_env() {
  CmaOptions o;
  if (const auto ms = env::millis("TENSORHUB_CMA_DEADLINE_MS", 1)) o.deadline = *ms;
  if (const auto n = env::integer("TENSORHUB_CMA_THREADS", 1, 64)) o.threads = static_cast<std::uint32_t>(*n);
  if (const auto b = env::bytes("TENSORHUB_CMA_CHUNK", 4096, 1ull << 30)) o.chunk = *b;
  if (const auto b = env::bytes("TENSORHUB_CMA_DIGEST_BLOCK", 4096, 1ull << 30)) o.digest_block = *b;
  if (const auto b = env::bytes("TENSORHUB_CMA_BOUNCE_BLOCK", 4096, 1ull << 30)) o.bounce_block = *b;
  return o;
}

CmaTransport::CmaTransport(CmaOptions options) : options_(std::move(options)) {
  if (options_.deadline.count() <= 0) throw UserError("cma: the read deadline must be positive");
  if (options_.threads == 0 || options_.chunk == 0 || options_.digest_block == 0 || options_.bounce_block == 0)
    throw UserError("cma: need at least one thread, a chunk size, a digest block and a bounce block");
  cma::EndpointText self;
  self.host = cma::local_host();
  self.pid = getpid();
  const auto start = cma::process_start_time(self.pid);
  if (!start) throw TransportError("cma: cannot read this process's start time from /proc/self/stat");
  self.start_time = *start;
  table_ = std::make_shared<cma::GenerationTable>(cma::kMaxSlots);
  self.table = table_->address();
  self.slots = table_->slots();
  boot_id_ = self.host.boot_id;
  pid_ns_ = self.host.pid_ns;
  endpoint_ = cma::encode_endpoint(self);
  reads_ = std::make_unique<cma::Reads>(
      options_.threads, cma::Reads::Blocks{options_.chunk, options_.digest_block, options_.bounce_block},
      options_.deadline);
}

CmaTransport::~CmaTransport() = default;

bool CmaTransport::reaches(std::string_view endpoint) const {
  if (!cma::looks_like_endpoint(endpoint)) return false;
  try {
    const auto e = cma::decode_endpoint(endpoint);
    return e.host.boot_id == boot_id_ && e.host.pid_ns == pid_ns_;
  } catch (const TransportError&) {
    return false;
  }
}

std::unique_ptr<Exposure> CmaTransport::expose(std::span<const MemoryRange> ranges) {
  for (const auto& r : ranges) {
    if (r.memory != MemoryKind::kHost) throw UserError("cma: only host memory can be exposed");
  }
  cma::allow_any_reader();
  const auto entry = table_->acquire();
  std::vector<std::string> descriptors;
  try {
    descriptors.reserve(ranges.size());
    for (const auto& r : ranges) {
      descriptors.push_back(cma::encode_descriptor(
          cma::DescriptorText{static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(r.base)), r.bytes, entry.slot,
                              entry.generation}));
    }
  } catch (...) {
    table_->release(entry.slot);
    throw;
  }
  return std::make_unique<CmaExposure>(table_, entry.slot, std::move(descriptors));
}

void CmaTransport::post(const ReadOp& op) {
  require_host_destination(op, "cma");
  const auto e = cma::decode_endpoint(op.endpoint);
  if (e.host.boot_id != boot_id_ || e.host.pid_ns != pid_ns_) {
    throw TransportError("cma: holder " + cma::label(e) + " is on another host or pid namespace (boot id " +
                         e.host.boot_id + ", pid ns " + std::to_string(e.host.pid_ns) + ")");
  }
  const auto d = cma::decode_descriptor(op.descriptor);
  if (d.slot >= e.slots) throw TransportError("cma: descriptor slot outside the holder's generation table");
  if (op.offset > d.bytes || op.length > d.bytes - op.offset) {
    throw TransportError("cma: read of " + std::to_string(op.length) + " bytes at " + std::to_string(op.offset) +
                         " past the end of a " + std::to_string(d.bytes) + "-byte region");
  }
  if (op.length > 0 && op.dst == nullptr) throw TransportError("cma: read into a null destination");
  if (!op.pieces.empty()) require_pieces_cover(op, "cma");
  reads_->post(op.endpoint, e, d, op);
}

void CmaTransport::poll(std::vector<Completion>& out) { reads_->poll(out); }

std::size_t CmaTransport::in_flight() const { return reads_->in_flight(); }

void* CmaTransport::allocate(std::uint64_t bytes) {
  const std::uint64_t rounded = (std::max<std::uint64_t>(bytes, 1) + kPage - 1) / kPage * kPage;
  void* p = std::aligned_alloc(kPage, rounded);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}

void CmaTransport::deallocate(void* p) { std::free(p); }

}  // namespace tensorhub::transport
