#include "exposure.hpp"

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "am_protocol.hpp"
#include "codec.hpp"
#include "mem_handle.hpp"
#include "src/coalesce.hpp"
#include "tensorhub/core/error.hpp"

namespace tensorhub::transport::ucx {
namespace {

// How long withdrawing an exposure waits for active-message replies still sent from it.
constexpr std::chrono::milliseconds kDrainLimit{2000};

class UcxExposure final : public Exposure {
 public:
  UcxExposure(std::shared_ptr<Core> core, std::vector<std::unique_ptr<MemHandle>> handles,
              std::vector<std::uint64_t> served, std::vector<std::string> descriptors)
      : core_(std::move(core)),
        handles_(std::move(handles)),
        served_(std::move(served)),
        descriptors_(std::move(descriptors)) {}
  ~UcxExposure() override {
    const std::lock_guard lock(core_->mutex);
    // No new active-message read is served from here; replies in flight end first (a stopped
    // reader's are abandoned after kDrainLimit, am_server.hpp).
    (void)core_->server.remove(served_, kDrainLimit);
    handles_.clear();
  }
  UcxExposure(const UcxExposure&) = delete;
  UcxExposure& operator=(const UcxExposure&) = delete;
  const std::vector<std::string>& descriptors() const override { return descriptors_; }

 private:
  std::shared_ptr<Core> core_;  // first: outlives the handles
  std::vector<std::unique_ptr<MemHandle>> handles_;
  std::vector<std::uint64_t> served_;  // AmServer regions
  std::vector<std::string> descriptors_;
};

struct Registration {
  Span span;
  std::vector<std::byte> rkey;  // packed
  ucs_memory_type_t type = UCS_MEMORY_TYPE_HOST;
};

std::uint64_t address_of(const void* p) { return static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(p)); }

// Registers the merged spans of the ranges of one memory kind.
void register_kind(Core& core, std::span<const MemoryRange> ranges, MemoryKind kind, ucs_memory_type_t type,
                   std::vector<std::unique_ptr<MemHandle>>& handles, std::vector<Registration>& out) {
  std::vector<Span> spans;
  for (const auto& r : ranges) {
    if (r.memory == kind && r.bytes > 0) spans.push_back(Span{address_of(r.base), address_of(r.base) + r.bytes});
  }
  for (const auto& s : coalesce(spans, 0)) {
    auto& h = handles.emplace_back(
        std::make_unique<MemHandle>(core.context, reinterpret_cast<void*>(s.begin), s.end - s.begin, type));
    out.push_back(Registration{s, h->packed_rkey(), type});
  }
}

}  // namespace

std::unique_ptr<Exposure> expose_ranges(const std::shared_ptr<Core>& core, std::span<const MemoryRange> ranges) {
  const bool any_cuda =
      std::any_of(ranges.begin(), ranges.end(), [](const auto& r) { return r.memory == MemoryKind::kCuda; });
  if (any_cuda && !core->context.supports(UCS_MEMORY_TYPE_CUDA)) {
    throw UserError("ucx: CUDA memory needs a CUDA-enabled UCX (this UCX registers host memory only)");
  }
  const std::lock_guard lock(core->mutex);
  // Declared after the lock: on an exception the handles are unmapped while it is still held.
  std::vector<std::unique_ptr<MemHandle>> handles;
  std::vector<Registration> regs;
  register_kind(*core, ranges, MemoryKind::kHost, UCS_MEMORY_TYPE_HOST, handles, regs);
  register_kind(*core, ranges, MemoryKind::kCuda, UCS_MEMORY_TYPE_CUDA, handles, regs);
  std::vector<std::string> descriptors;
  descriptors.reserve(ranges.size());
  const auto holder = core->worker.address();  // each key is bound to it (codec.hpp)
  for (const auto& r : ranges) {
    const auto begin = address_of(r.base);
    if (r.bytes == 0) {
      // Nothing to register; no read ever needs the key, but the format wants one.
      descriptors.push_back(encode_descriptor(begin, 0, std::vector<std::byte>{std::byte{0}}, holder));
      continue;
    }
    const auto it = std::find_if(regs.begin(), regs.end(), [&](const Registration& g) {
      return g.span.begin <= begin && begin + r.bytes <= g.span.end;
    });
    require(it != regs.end(), "ucx: exposed range outside every registration");
    descriptors.push_back(encode_descriptor(begin, r.bytes, it->rkey, holder));
  }
  std::vector<std::uint64_t> served;
  served.reserve(regs.size());
  try {
    for (const auto& g : regs) {
      served.push_back(core->server.add(g.span.begin, g.span.end - g.span.begin, key_hash(g.rkey), g.type));
    }
  } catch (...) {
    (void)core->server.remove(served, kDrainLimit);  // nothing was handed out: none in flight
    throw;
  }
  return std::make_unique<UcxExposure>(core, std::move(handles), std::move(served), std::move(descriptors));
}

}  // namespace tensorhub::transport::ucx
