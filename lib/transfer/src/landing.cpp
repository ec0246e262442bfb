#include "landing.hpp"

#include <algorithm>
#include <cstring>
#include <functional>

#include "tensorhub/core/checksum.hpp"
#include "tensorhub/core/error.hpp"
#include "tensorhub/device/device.hpp"
#include "verifier.hpp"

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
    : m_(m), transport_(transport), scatter_reads_(o.scatter_reads), digest_(o.verify || o.relay) {
  targets_.resize(m.tensors.size());
  bool device_memory = false;
  for (const auto& d : dests) {
    require(d.tensor < m.tensors.size(), "destination tensor index out of range");
    const auto& e = m.tensors[d.tensor];
    auto runs = d.runs.empty() ? std::vector<Run>{Run{0, 0, e.spec.bytes(), 1, 0, 0}} : d.runs;
    targets_[d.tensor].push_back(Target{static_cast<unsigned char*>(d.data), d.memory, std::move(runs)});
    device_memory |= d.memory == MemoryKind::kCuda;
  }
  whole_.assign(targets_.size(), false);
  for (const auto& d : dests) whole_[d.tensor] = whole_[d.tensor] || d.runs.empty();
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

std::vector<transport::Piece> Landing::scatter_pieces(std::uint32_t chunk) const {
  const auto& spec = m_.chunks[chunk];
  const auto& ts = targets_[spec.tensor];
  if (ts.size() != 1 || ts.front().memory == MemoryKind::kCuda) return {};
  std::vector<std::pair<std::uint64_t, transport::Piece>> found;  // (source offset, piece)
  for_each_piece(ts.front().runs, spec.offset, spec.offset + spec.length,
                 [&](std::uint64_t src, std::uint64_t dst, std::uint64_t len) {
                   found.emplace_back(src, transport::Piece{dst, len});
                 });
  if (found.size() < 2 || spec.length / found.size() < kMinScatterPiece) return {};
  std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  // The pieces must be every byte of the chunk, in order (a read scatters all it reads).
  std::vector<transport::Piece> out;
  out.reserve(found.size());
  std::uint64_t at = spec.offset;
  for (const auto& [src, piece] : found) {
    if (src != at) return {};
    at += piece.length;
    if (!out.empty() && out.back().offset + out.back().length == piece.offset) {
      out.back().length += piece.length;  // contiguous in the destination too
    } else {
      out.push_back(piece);
    }
  }
  if (at != spec.offset + spec.length || out.size() < 2) return {};
  return out;
}

bool Landing::scatters(std::uint32_t chunk, const std::string& endpoint, const std::string& descriptor) const {
  return scatter_reads_ && transport_.can_scatter(endpoint, descriptor) && !scatter_pieces(chunk).empty();
}

std::optional<Landing::Scattered> Landing::scattered(std::uint32_t chunk) const {
  const auto it = scattered_.find(chunk);
  if (it == scattered_.end()) return std::nullopt;
  return Scattered{targets_[m_.chunks[chunk].tensor].front().data, &it->second};
}

void Landing::finish_scattered(std::uint32_t chunk, bool good) noexcept {
  if (scattered_.erase(chunk) != 0 && good) scattered_bytes_ += m_.chunks[chunk].length;
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
  // A chunk landing in host memory: the path may hash it as it copies (ReadOp::digest).
  if (digest_ && (p.to == nullptr || p.memory != MemoryKind::kCuda)) op.digest = m_.checksum_algorithm;
  if (p.to == nullptr) {
    if (scatter_reads_ && transport_.can_scatter(endpoint, descriptor)) {
      if (auto pieces = scatter_pieces(chunk); !pieces.empty()) {
        op.dst = targets_[spec.tensor].front().data;
        op.pieces = pieces;
        scattered_[chunk] = std::move(pieces);
        return op;
      }
    }
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

bool Landing::can_read(std::uint32_t chunk, const std::string& endpoint, const std::string& descriptor) const {
  const Place p = place(chunk);
  if (p.to != nullptr && p.memory != MemoryKind::kCuda) return true;  // straight into host memory
  if (std::any_of(slots_.begin(), slots_.end(), [](const Slot& s) { return !s.busy; })) return true;
  return p.to == nullptr && scatters(chunk, endpoint, descriptor);
}

const unsigned char* Landing::host_bytes(std::uint32_t chunk) const {
  if (slot_of_.count(chunk) != 0 || scattered_.count(chunk) != 0) return nullptr;
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

bool Landing::land_staged(std::uint32_t chunk, Slot& slot, bool check, std::optional<std::uint64_t> digest) {
  const auto& spec = m_.chunks[chunk];
  if (check && digest.value_or(checksum64(m_.checksum_algorithm, slot.bytes.get(), spec.length)) != spec.checksum) {
    return false;
  }
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

bool Landing::land(std::uint32_t chunk, bool check, std::optional<std::uint64_t> digest) {
  const auto& spec = m_.chunks[chunk];
  if (check && digest) digested_bytes_ += spec.length;
  if (const auto it = scattered_.find(chunk); it != scattered_.end()) {
    const bool good = !check || (digest ? *digest
                                        : scattered_checksum(m_.checksum_algorithm, targets_[spec.tensor].front().data,
                                                             it->second)) == spec.checksum;
    finish_scattered(chunk, good);
    return good;
  }
  if (const auto it = slot_of_.find(chunk); it != slot_of_.end()) {
    Slot& slot = slots_[it->second.slot];
    const bool staged = it->second.staged;
    try {
      if (staged) {
        const bool good = land_staged(chunk, slot, check, digest);
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
  if (p.memory != MemoryKind::kCuda) {
    return !check || (digest ? *digest : checksum64(m_.checksum_algorithm, p.to, spec.length)) == spec.checksum;
  }
  if (!check) return true;
  const auto sums = dev_->device.xxh3_64_chunks(p.to, spec.length, spec.length, dev_->stream);
  return sums.size() == 1 && sums.front() == spec.checksum;
}

void Landing::release(std::uint32_t chunk) noexcept {
  free_slot(chunk);
  scattered_.erase(chunk);
}

void Landing::abandon(std::uint32_t chunk) noexcept {
  scattered_.erase(chunk);  // its pieces are the destination's own bytes: nothing to keep
  if (const auto it = slot_of_.find(chunk); it != slot_of_.end()) {
    // The transport may still write it: leak the slot's bytes and never hand it out again.
    (void)slots_[it->second.slot].bytes.release();
    slot_of_.erase(it);
  }
}

}  // namespace tensorhub::transfer
