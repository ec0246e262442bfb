// Where the chunk engine's reads land (private header), for both modes: host destinations are
// read into directly and verified on the CPU; device destinations (Destination::memory kCuda)
// are read into directly when the chosen path can write device memory
// (Transport::can_read_into), otherwise into a bounded host bounce ring (one slot of a chunk
// per read in flight, allocated on first use, reused) and copied host-to-device on a stream of
// the device; device chunks are verified on the device (Device::xxh3_64_chunks over the landed
// chunk), so the host never touches device bytes. A chunk counts as held only after land()
// said so. The destructor synchronizes the stream: no device write of this pull is pending once
// the engine returns (errors and cancels included).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "tensorhub/core/manifest.hpp"
#include "tensorhub/transfer/pull_engine.hpp"

namespace tensorhub::transfer {

class Landing {
 public:
  // UserError when a destination is device memory and options.device is null, or when the
  // manifest's checksums are not XXH3-64 (the device computes only those).
  Landing(const Manifest& m, std::span<const Destination> dests, const EngineOptions& o,
          transport::Transport& transport);
  ~Landing();
  Landing(const Landing&) = delete;
  Landing& operator=(const Landing&) = delete;

  // The read of `chunk` from region `descriptor` of `endpoint` (tag 0): its destination is the
  // chunk's bytes in the destination buffer, or a bounce slot (held until land/release).
  // ContractViolation if more reads bounce at once than EngineOptions::inflight.
  transport::ReadOp read_op(std::uint32_t chunk, const std::string& endpoint, const std::string& descriptor,
                            std::uint64_t offset);
  // The read of `chunk` completed with its bytes: moves them to the destination (bounced: a
  // host-to-device copy) and, when `check`, compares their checksum. True: the chunk's bytes
  // are in place (and match); false: they do not match. Frees the chunk's bounce slot.
  bool land(std::uint32_t chunk, bool check);
  // Where `chunk` lands in host memory (read there directly: a host destination); null for a
  // chunk of a device destination.
  const unsigned char* host_bytes(std::uint32_t chunk) const { return on_device(chunk) ? nullptr : where(chunk); }
  // The read of `chunk` failed: frees its bounce slot.
  void release(std::uint32_t chunk) noexcept;
  // The read of `chunk` was abandoned (the transport may still write its slot): the slot is
  // never reused.
  void abandon(std::uint32_t chunk) noexcept;
  // Bytes bounced through host memory so far, and the bounce ring's size.
  std::uint64_t bounced_bytes() const { return bounced_bytes_; }
  std::uint64_t ring_bytes() const { return ring_bytes_; }

 private:
  struct Slot {
    std::unique_ptr<unsigned char[]> bytes;
    bool busy = false;
  };
  bool on_device(std::uint32_t chunk) const;
  unsigned char* where(std::uint32_t chunk) const;
  void synchronize() noexcept;

  const Manifest& m_;
  transport::Transport& transport_;
  std::vector<unsigned char*> dst_;  // by tensor
  std::vector<MemoryKind> memory_;   // by tensor
  struct DeviceState;
  std::unique_ptr<DeviceState> dev_;                        // null without device destinations
  std::vector<Slot> slots_;                                 // the bounce ring (inflight slots of chunk_bytes)
  std::unordered_map<std::uint32_t, std::size_t> slot_of_;  // chunk -> its busy slot
  std::uint64_t bounced_bytes_ = 0;
  std::uint64_t ring_bytes_ = 0;
};

}  // namespace tensorhub::transfer
