#include "landing.hpp"

#include <algorithm>

#include "tensorhub/core/checksum.hpp"
#include "tensorhub/core/error.hpp"
#include "tensorhub/device/device.hpp"

namespace tensorhub::transfer {

// The device side of one pull: the stream its host-to-device copies and checksums run on, and
// an event recorded after each copy (the bounce slot is reused only once it is reached).
struct Landing::DeviceState {
  device::Device& device;
  device::Stream stream;
  device::Event copied;
  explicit DeviceState(device::Device& d) : device(d), stream(d.create_stream()), copied(d.create_event()) {}
};

Landing::Landing(const Manifest& m, std::span<const Destination> dests, const EngineOptions& o,
                 transport::Transport& transport)
    : m_(m), transport_(transport) {
  dst_.assign(m.tensors.size(), nullptr);
  memory_.assign(m.tensors.size(), MemoryKind::kHost);
  std::uint64_t largest = 0;
  for (const auto& d : dests) {
    require(d.tensor < m.tensors.size(), "destination tensor index out of range");
    dst_[d.tensor] = static_cast<unsigned char*>(d.data);
    memory_[d.tensor] = d.memory;
    if (d.memory != MemoryKind::kCuda) continue;
    const auto& e = m.tensors[d.tensor];
    for (std::uint32_t c = 0; c < e.num_chunks; ++c) largest = std::max(largest, m.chunks[e.first_chunk + c].length);
  }
  if (largest == 0) return;
  if (o.device == nullptr) {
    throw UserError("pull of '" + m.model + "' v" + std::to_string(m.version) +
                    ": a destination is device memory but the pull has no device");
  }
  if (m.checksum_algorithm != ChecksumAlgorithm::kXxh3_64) {
    throw UserError("pull of '" + m.model + "' v" + std::to_string(m.version) +
                    " into device memory: its checksums are " +
                    std::string(checksum_algorithm_name(m.checksum_algorithm)) + ", the device verifies only xxh3_64");
  }
  dev_ = std::make_unique<DeviceState>(*o.device);
  slots_.resize(o.inflight);
  ring_bytes_ = largest * o.inflight;
}

Landing::~Landing() { synchronize(); }

void Landing::synchronize() noexcept {
  if (!dev_) return;
  try {
    dev_->stream.synchronize();
  } catch (const std::exception& e) {
    Logger("transfer").error(std::string("device stream of a pull failed: ") + e.what());
  }
}

bool Landing::on_device(std::uint32_t chunk) const { return memory_[m_.chunks[chunk].tensor] == MemoryKind::kCuda; }

unsigned char* Landing::where(std::uint32_t chunk) const {
  const auto& spec = m_.chunks[chunk];
  return dst_[spec.tensor] + spec.offset;
}

transport::ReadOp Landing::read_op(std::uint32_t chunk, const std::string& endpoint, const std::string& descriptor,
                                   std::uint64_t offset) {
  const auto& spec = m_.chunks[chunk];
  transport::ReadOp op{endpoint, descriptor, offset, where(chunk), spec.length, 0};
  if (!on_device(chunk)) return op;
  if (transport_.can_read_into(endpoint, descriptor, MemoryKind::kCuda)) {
    op.dst_memory = MemoryKind::kCuda;  // the path writes device memory itself
    return op;
  }
  const auto free = std::find_if(slots_.begin(), slots_.end(), [](const Slot& s) { return !s.busy; });
  require(free != slots_.end(), "a bounce slot for every read in flight");
  if (!free->bytes) free->bytes = std::make_unique<unsigned char[]>(ring_bytes_ / slots_.size());
  free->busy = true;
  slot_of_[chunk] = static_cast<std::size_t>(free - slots_.begin());
  op.dst = free->bytes.get();
  return op;
}

bool Landing::land(std::uint32_t chunk, bool check) {
  const auto& spec = m_.chunks[chunk];
  if (!on_device(chunk)) return !check || checksum64(m_.checksum_algorithm, where(chunk), spec.length) == spec.checksum;
  if (const auto it = slot_of_.find(chunk); it != slot_of_.end()) {
    Slot& slot = slots_[it->second];
    slot_of_.erase(it);
    try {
      dev_->device.copy_async(where(chunk), slot.bytes.get(), spec.length, device::CopyKind::kHostToDevice,
                              dev_->stream);
      dev_->copied.record(dev_->stream);
      dev_->copied.synchronize();  // the slot is free again once the copy read it
    } catch (...) {
      slot.busy = false;
      throw;
    }
    slot.busy = false;
    bounced_bytes_ += spec.length;
  }
  if (!check) return true;
  const auto sums = dev_->device.xxh3_64_chunks(where(chunk), spec.length, spec.length, dev_->stream);
  return sums.size() == 1 && sums.front() == spec.checksum;
}

void Landing::release(std::uint32_t chunk) noexcept {
  if (const auto it = slot_of_.find(chunk); it != slot_of_.end()) {
    slots_[it->second].busy = false;
    slot_of_.erase(it);
  }
}

void Landing::abandon(std::uint32_t chunk) noexcept {
  if (const auto it = slot_of_.find(chunk); it != slot_of_.end()) {
    // The transport may still write it: leak the slot's bytes and never hand it out again.
    (void)slots_[it->second].bytes.release();
    slot_of_.erase(it);
  }
}

}  // namespace tensorhub::transfer
