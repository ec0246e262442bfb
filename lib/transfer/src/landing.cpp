#include "landing.hpp"

#include <algorithm>
#include <cstring>
#include <functional>

#include "tensorhub/core/checksum.hpp"
#include "tensorhub/core/error.hpp"
#include "tensorhub/device/device.hpp"

namespace tensorhub::transfer {

// The device side of one pull: the stream its host-to-device copies and checksums run on, and
// an event recorded after each copy (the slot is reused only once it is reached).
struct Landing::DeviceState {
  device::Device& device;
  device::Stream stream;
  device::Event copied;
  explicit DeviceState(device::Device& d) : device(d), stream(d.create_stream()), copied(d.create_event()) {}
};

Landing::Landing(const Manifest& m, std::span<const Destination> dests, const EngineOptions& o,
                 transport::Transport& transport)
    : m_(m), transport_(transport) {
  targets_.resize(m.tensors.size());
  bool device_memory = false;
  for (const auto& d : dests) {
    require(d.tensor < m.tensors.size(), "destination tensor index out of range");
    require(d.runs.empty() || !o.relay, "a pull into boxes does not relay");
    const auto& e = m.tensors[d.tensor];
    auto runs = d.runs.empty() ? std::vector<Run>{Run{0, 0, e.spec.bytes(), 1, 0, 0}} : d.runs;
    targets_[d.tensor].push_back(Target{static_cast<unsigned char*>(d.data), d.memory, std::move(runs)});
    device_memory |= d.memory == MemoryKind::kCuda;
  }
  // Slots: a chunk of a device destination may bounce, one of a box destination may be staged.
  for (std::uint32_t t = 0; t < targets_.size(); ++t) {
    const auto& ts = targets_[t];
    const bool may_slot = ts.size() > 1 || std::any_of(ts.begin(), ts.end(), [&](const Target& x) {
                            return x.memory == MemoryKind::kCuda || x.runs.size() != 1 ||
                                   x.runs.front() != Run{0, 0, m.tensors[t].spec.bytes(), 1, 0, 0};
                          });
    if (!may_slot) continue;
    const auto& e = m.tensors[t];
    for (std::uint32_t c = 0; c < e.num_chunks; ++c) {
      slot_bytes_ = std::max(slot_bytes_, m.chunks[e.first_chunk + c].length);
    }
  }
  if (slot_bytes_ > 0) {
    // Twice the reads in flight: staged chunks keep their slot while another thread verifies
    // them (PlanReader posts a read that needs a slot only when one is free: can_read).
    slots_.resize(2 * static_cast<std::size_t>(o.inflight));
    ring_bytes_ = slot_bytes_ * slots_.size();
  }
  if (!device_memory) return;
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

Landing::Place Landing::place(std::uint32_t chunk) const {
  const auto& spec = m_.chunks[chunk];
  const auto& ts = targets_[spec.tensor];
  if (ts.size() != 1) return {};
  const auto at = direct_offset(ts.front().runs, spec.offset, spec.offset + spec.length);
  if (!at) return {};
  return Place{ts.front().data + *at, ts.front().memory};
}

std::size_t Landing::take_slot(std::uint32_t chunk, bool staged) {
  const auto free = std::find_if(slots_.begin(), slots_.end(), [](const Slot& s) { return !s.busy; });
  require(free != slots_.end(), "a slot for every read in flight");
  if (!free->bytes) free->bytes = std::make_unique<unsigned char[]>(slot_bytes_);
  free->busy = true;
  const auto i = static_cast<std::size_t>(free - slots_.begin());
  slot_of_[chunk] = Busy{i, staged};
  return i;
}

void Landing::free_slot(std::uint32_t chunk) noexcept {
  if (const auto it = slot_of_.find(chunk); it != slot_of_.end()) {
    slots_[it->second.slot].busy = false;
    slot_of_.erase(it);
  }
}

transport::ReadOp Landing::read_op(std::uint32_t chunk, const std::string& endpoint, const std::string& descriptor,
                                   std::uint64_t offset) {
  const auto& spec = m_.chunks[chunk];
  const Place p = place(chunk);
  transport::ReadOp op{endpoint, descriptor, offset, p.to, spec.length, 0};
  if (p.to == nullptr) {
    op.dst = slots_[take_slot(chunk, true)].bytes.get();
    return op;
  }
  if (p.memory != MemoryKind::kCuda) return op;
  if (transport_.can_read_into(endpoint, descriptor, MemoryKind::kCuda)) {
    op.dst_memory = MemoryKind::kCuda;  // the path writes device memory itself
    return op;
  }
  op.dst = slots_[take_slot(chunk, false)].bytes.get();
  return op;
}

bool Landing::can_read(std::uint32_t chunk) const {
  const Place p = place(chunk);
  if (p.to != nullptr && p.memory != MemoryKind::kCuda) return true;  // straight into host memory
  return std::any_of(slots_.begin(), slots_.end(), [](const Slot& s) { return !s.busy; });
}

const unsigned char* Landing::host_bytes(std::uint32_t chunk) const {
  if (slot_of_.count(chunk) != 0) return nullptr;
  const Place p = place(chunk);
  return p.memory == MemoryKind::kCuda ? nullptr : p.to;
}

void Landing::scatter(std::uint32_t chunk, const unsigned char* bytes) const {
  const auto& spec = m_.chunks[chunk];
  bool to_device = false;
  for (const auto& t : targets_[spec.tensor]) {
    for_each_piece(t.runs, spec.offset, spec.offset + spec.length,
                   [&](std::uint64_t src, std::uint64_t dst, std::uint64_t len) {
                     const unsigned char* from = bytes + (src - spec.offset);
                     if (t.memory != MemoryKind::kCuda) {
                       std::memcpy(t.data + dst, from, len);
                       return;
                     }
                     dev_->device.copy_async(t.data + dst, from, len, device::CopyKind::kHostToDevice, dev_->stream);
                     to_device = true;
                   });
  }
  if (to_device) {
    dev_->copied.record(dev_->stream);
    dev_->copied.synchronize();  // the slot is free again once the copies read it
  }
}

std::function<void()> Landing::host_scatter(std::uint32_t chunk) const {
  const auto& ts = targets_[m_.chunks[chunk].tensor];
  const auto* bytes = staged_slot(chunk);
  if (bytes == nullptr ||
      std::any_of(ts.begin(), ts.end(), [](const Target& t) { return t.memory == MemoryKind::kCuda; })) {
    return {};
  }
  return [this, chunk, bytes] { scatter(chunk, bytes); };  // host memcpy only: safe on another thread
}

bool Landing::land_staged(std::uint32_t chunk, Slot& slot, bool check) {
  const auto& spec = m_.chunks[chunk];
  if (check && checksum64(m_.checksum_algorithm, slot.bytes.get(), spec.length) != spec.checksum) return false;
  scatter(chunk, slot.bytes.get());
  staged_bytes_ += spec.length;
  return true;
}

const unsigned char* Landing::staged_slot(std::uint32_t chunk) const {
  const auto it = slot_of_.find(chunk);
  return it != slot_of_.end() && it->second.staged ? slots_[it->second.slot].bytes.get() : nullptr;
}

void Landing::finish_staged(std::uint32_t chunk, bool good, bool copied) {
  const auto it = slot_of_.find(chunk);
  require(it != slot_of_.end() && it->second.staged, "finish_staged of a chunk that is not staged");
  try {
    if (good && !copied) scatter(chunk, slots_[it->second.slot].bytes.get());
    if (good) staged_bytes_ += m_.chunks[chunk].length;
  } catch (...) {
    free_slot(chunk);
    throw;
  }
  free_slot(chunk);
}

bool Landing::land(std::uint32_t chunk, bool check) {
  const auto& spec = m_.chunks[chunk];
  if (const auto it = slot_of_.find(chunk); it != slot_of_.end()) {
    Slot& slot = slots_[it->second.slot];
    const bool staged = it->second.staged;
    try {
      if (staged) {
        const bool good = land_staged(chunk, slot, check);
        free_slot(chunk);
        return good;
      }
      dev_->device.copy_async(place(chunk).to, slot.bytes.get(), spec.length, device::CopyKind::kHostToDevice,
                              dev_->stream);
      dev_->copied.record(dev_->stream);
      dev_->copied.synchronize();  // the slot is free again once the copy read it
    } catch (...) {
      free_slot(chunk);
      throw;
    }
    free_slot(chunk);
    bounced_bytes_ += spec.length;
  }
  const Place p = place(chunk);
  if (p.memory != MemoryKind::kCuda)
    return !check || checksum64(m_.checksum_algorithm, p.to, spec.length) == spec.checksum;
  if (!check) return true;
  const auto sums = dev_->device.xxh3_64_chunks(p.to, spec.length, spec.length, dev_->stream);
  return sums.size() == 1 && sums.front() == spec.checksum;
}

void Landing::release(std::uint32_t chunk) noexcept { free_slot(chunk); }

void Landing::abandon(std::uint32_t chunk) noexcept {
  if (const auto it = slot_of_.find(chunk); it != slot_of_.end()) {
    // The transport may still write it: leak the slot's bytes and never hand it out again.
    (void)slots_[it->second.slot].bytes.release();
    slot_of_.erase(it);
  }
}

}  // namespace tensorhub::transfer
