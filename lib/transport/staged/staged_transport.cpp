#include "staged/staged_transport.hpp"

#include <sstream>
#include <utility>

#include "src/host_only.hpp"
#include "staged/codec.hpp"
#include "staged/reads.hpp"
#include "staged/server.hpp"
#include "tensorhub/core/env.hpp"
#include "tensorhub/core/error.hpp"

namespace tensorhub::transport {
namespace {

class StagedExposure final : public Exposure {
 public:
  StagedExposure(std::shared_ptr<staged::Server> server, std::vector<std::uint64_t> ids,
                 std::vector<std::string> descriptors)
      : server_(std::move(server)), ids_(std::move(ids)), descriptors_(std::move(descriptors)) {}
  ~StagedExposure() override {
    for (const auto id : ids_) server_->remove(id);  // waits for a copy of it in progress
  }
  StagedExposure(const StagedExposure&) = delete;
  StagedExposure& operator=(const StagedExposure&) = delete;
  const std::vector<std::string>& descriptors() const override { return descriptors_; }

 private:
  std::shared_ptr<staged::Server> server_;
  std::vector<std::uint64_t> ids_;
  std::vector<std::string> descriptors_;
};

std::uint64_t address_of(const void* p) { return static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(p)); }

}  // namespace

StagedOptions StagedOptions::from_env() {
  StagedOptions o;
  if (const auto b = env::bytes("TENSORHUB_STAGED_SLOT", 4096, 1ull << 32)) o.slot_bytes = *b;
  if (const auto n = env::integer("TENSORHUB_STAGED_SLOTS", 1, 4096)) o.slots = static_cast<std::uint32_t>(*n);
  if (const auto n = env::integer("TENSORHUB_STAGED_DEPTH", 1, 64)) o.depth = static_cast<std::uint32_t>(*n);
  if (const auto t = env::millis("TENSORHUB_STAGED_TIMEOUT_MS", 10, 3'600'000)) o.timeout = *t;
  if (const auto a = env::text("TENSORHUB_STAGED_ADDRESS")) o.address = *a;
  if (const auto v = env::text("TENSORHUB_STAGED_VIA")) o.via = *v;
  return o;
}

StagedTransport::StagedTransport(device::Device& device, std::function<std::unique_ptr<Transport>()> make_inner,
                                 StagedOptions options)
    : device_(device), make_inner_(std::move(make_inner)), options_(std::move(options)) {
  if (!make_inner_) throw UserError("staged: no inner host path");
  if (options_.slot_bytes == 0 || options_.slots == 0 || options_.depth == 0) {
    throw UserError("staged: slot size, slots and depth must be at least 1");
  }
  server_ = std::make_shared<staged::Server>(device_, staged::listen_address(options_.address), options_.slot_bytes,
                                             options_.slots);
  endpoint_ = staged::encode_endpoint(server_->endpoint());
  staged::ReadsOptions ro;
  ro.depth = options_.depth;
  ro.timeout = options_.timeout;
  reads_ = std::make_unique<staged::Reads>([this]() -> Transport& { return inner(); }, ro);
}

StagedTransport::~StagedTransport() {
  reads_.reset();
  server_->stop();  // nothing copies into the ring any more (exposures still alive keep the object)
  ring_exposure_.reset();
}

Transport& StagedTransport::inner() {
  if (!inner_) {
    inner_ = make_inner_();
    if (!inner_) throw TransportError("staged: the inner host path could not be made");
  }
  return *inner_;
}

bool StagedTransport::reaches(std::string_view endpoint) const {
  if (!staged::looks_like_endpoint(endpoint)) return false;
  try {
    (void)staged::decode_endpoint(endpoint);
    return true;
  } catch (const TransportError&) {
    return false;
  }
}

bool StagedTransport::can_expose(const MemoryRange& range) const {
  if (range.memory != MemoryKind::kCuda || range.bytes == 0) return false;
  const auto info = device_.query(range.base);
  if (!info.is_device || info.ordinal != device_.ordinal()) return false;
  const auto begin = address_of(info.base), at = address_of(range.base);
  return at >= begin && range.bytes <= info.size && at - begin <= info.size - range.bytes;
}

void StagedTransport::ensure_ring() {
  if (ring_exposure_) return;
  auto ring = device_.allocate_host(options_.slot_bytes * options_.slots);
  const MemoryRange r{ring.get(), ring.size(), MemoryKind::kHost};
  auto exposure = inner().expose(std::span(&r, 1));
  staged::Hello hello;
  hello.inner_endpoint = inner().endpoint();
  hello.ring_descriptor = exposure->descriptors().at(0);
  server_->set_ring(ring.get(), std::move(hello));
  ring_ = std::move(ring);
  ring_exposure_ = std::move(exposure);
}

std::unique_ptr<Exposure> StagedTransport::expose(std::span<const MemoryRange> ranges) {
  for (const auto& r : ranges) {
    if (!can_expose(r)) {
      std::ostringstream s;
      s << "staged: " << r.bytes << " bytes of " << memory_kind_name(r.memory) << " memory at " << r.base
        << " is not device memory of " << device_.describe();
      throw UserError(s.str());
    }
  }
  ensure_ring();
  std::vector<std::uint64_t> ids;
  std::vector<std::string> descriptors;
  for (const auto& r : ranges) {
    ids.push_back(server_->add(r.base, r.bytes));
    descriptors.push_back(staged::encode_descriptor({ids.back(), r.bytes}));
  }
  return std::make_unique<StagedExposure>(server_, std::move(ids), std::move(descriptors));
}

void StagedTransport::post(const ReadOp& op) {
  require_host_destination(op, "staged");
  require_contiguous(op, "staged");
  reads_->post(op);
}

void StagedTransport::poll(std::vector<Completion>& out) { reads_->poll(out); }
std::size_t StagedTransport::in_flight() const { return reads_->in_flight(); }
std::uint64_t StagedTransport::served() const { return server_->served(); }
std::uint64_t StagedTransport::refused() const { return server_->refused(); }

}  // namespace tensorhub::transport
