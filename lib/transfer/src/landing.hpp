// Where the chunk engine's reads land (private header), for both modes: host destinations are
// read into directly and verified on the CPU; device destinations (Destination::memory kCuda)
// are read into directly when the chosen path can write device memory
// (Transport::can_read_into), otherwise into a bounded host bounce ring (one slot of a chunk
// per read in flight, allocated on first use, reused) and copied host-to-device on a stream of
// the device; device chunks are verified on the device (Device::xxh3_64_chunks over the landed
// chunk), so the host never touches device bytes. Box destinations (Destination::runs): a chunk
// one segment holds whole lands like a whole tensor's; any other chunk is read into a slot of the
// same ring (staged), verified there, on the host, as the bytes that came off the wire, and only
// then its pieces are copied to their destinations (host-to-device copies for device memory) --
// except a chunk whose bytes all go to one host destination in pieces of kMinScatterPiece bytes
// or more on average (a row-parallel box's rows): where the path can scatter a read
// (Transport::can_scatter) it lands straight in those pieces and is verified there (scattered). A
// chunk counts as held only after land() said so. The destructor synchronizes the stream: no
// device write of this pull is pending once the engine returns (errors and cancels included).
#pragma once

#include <cstdint>
#include <functional>
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
  // chunk's bytes in the destination buffer, or a bounce slot (held until land/release). A read
  // into host memory asks for a digest (ReadOp::digest) when the pull checks chunks.
  // ContractViolation if more reads bounce at once than EngineOptions::inflight.
  transport::ReadOp read_op(std::uint32_t chunk, const std::string& endpoint, const std::string& descriptor,
                            std::uint64_t offset);
  // The read of `chunk` completed with its bytes: moves them to the destination (bounced: a
  // host-to-device copy) and, when `check`, compares their checksum -- `digest` when the path
  // computed it as it copied (Completion::digest), else computed here. True: the chunk's bytes
  // are in place (and match); false: they do not match. Frees the chunk's bounce slot.
  bool land(std::uint32_t chunk, bool check, std::optional<std::uint64_t> digest = std::nullopt);
  // Where `chunk` (posted by read_op) lands in host memory when it is read there directly (a
  // host destination); null for a chunk of a device destination or one read into a slot.
  const unsigned char* host_bytes(std::uint32_t chunk) const;
  // Whether the read of `chunk` can be posted now: it lands in place in host memory, or a slot is
  // free (a device chunk may bounce, a box chunk may be staged).
  bool can_read(std::uint32_t chunk, const std::string& endpoint, const std::string& descriptor) const;
  // A chunk read scattered (read_op gave its ReadOp pieces): where its bytes lie, to verify them
  // (scattered_checksum); nullopt for any other chunk. Its entry stays until finish_scattered or
  // release.
  struct Scattered {
    const unsigned char* base = nullptr;
    const std::vector<transport::Piece>* pieces = nullptr;
  };
  std::optional<Scattered> scattered(std::uint32_t chunk) const;
  // A scattered chunk was verified elsewhere (or not verified: good): counts it and forgets it.
  void finish_scattered(std::uint32_t chunk, bool good) noexcept;
  // Average piece below which a chunk is staged rather than scattered: per-piece costs of the
  // paths (an Rget's datatype segments, iovecs) outweigh the staging copy there.
  static constexpr std::uint64_t kMinScatterPiece = 512;
  // Where a chunk read into a staging slot (a box chunk) lies, to verify it on another thread;
  // null for any other chunk. The slot stays the chunk's until finish_staged or release.
  const unsigned char* staged_slot(std::uint32_t chunk) const;
  // The copy of a staged chunk's pieces to its destinations, to run on the thread that verified
  // it once its bytes matched (Verifier::submit's `then`); empty when a destination is device
  // memory (copied by finish_staged on the pulling thread, on its stream) or the chunk is not
  // staged.
  std::function<void()> host_scatter(std::uint32_t chunk) const;
  // A staged chunk was verified elsewhere: `good` and not `copied` yet (by host_scatter's task),
  // its pieces are copied to their destinations; either way its slot is freed.
  void finish_staged(std::uint32_t chunk, bool good, bool copied);
  // The read of `chunk` failed: frees its bounce slot.
  void release(std::uint32_t chunk) noexcept;
  // The read of `chunk` was abandoned (the transport may still write its slot): the slot is
  // never reused.
  void abandon(std::uint32_t chunk) noexcept;
  // Bytes bounced through host memory so far, and the bounce ring's size.
  // Whether `chunk` lands in a destination that is all of its tensor: only such chunks are
  // announced by a relaying reader (a box destination holds parts of chunks, or strided ones).
  bool relays(std::uint32_t chunk) const { return whole_[m_.chunks[chunk].tensor]; }
  std::uint64_t bounced_bytes() const { return bounced_bytes_; }
  // Bytes read into a slot for box destinations and copied out so far.
  std::uint64_t staged_bytes() const { return staged_bytes_; }
  // Bytes read straight into strided destination pieces so far.
  std::uint64_t scattered_bytes() const { return scattered_bytes_; }
  // Bytes whose check used the path's digest (land's `digest`) so far.
  std::uint64_t digested_bytes() const { return digested_bytes_; }
  std::uint64_t ring_bytes() const { return ring_bytes_; }

 private:
  struct Slot {
    std::unique_ptr<unsigned char[]> bytes;
    bool busy = false;
  };
  // A destination of one tensor: the whole tensor at `data` (runs: one run over it), or a box's runs.
  struct Target {
    unsigned char* data = nullptr;
    MemoryKind memory = MemoryKind::kHost;
    std::vector<Run> runs;
  };
  // Where a chunk's read lands: straight into `to` (memory `memory`), or into a slot (null `to`).
  struct Place {
    unsigned char* to = nullptr;
    MemoryKind memory = MemoryKind::kHost;
  };
  Place place(std::uint32_t chunk) const;
  // The pieces of the one host destination `chunk` would land in scattered; empty when it cannot
  // (several destinations, device memory, bytes no destination wants, pieces too small).
  std::vector<transport::Piece> scatter_pieces(std::uint32_t chunk) const;
  bool scatters(std::uint32_t chunk, const std::string& endpoint, const std::string& descriptor) const;
  std::size_t take_slot(std::uint32_t chunk, bool staged);
  void free_slot(std::uint32_t chunk) noexcept;
  bool land_staged(std::uint32_t chunk, Slot& slot, bool check, std::optional<std::uint64_t> digest);
  void scatter(std::uint32_t chunk, const unsigned char* bytes) const;
  void synchronize() noexcept;

  const Manifest& m_;
  transport::Transport& transport_;
  std::vector<std::vector<Target>> targets_;  // by tensor
  std::vector<bool> whole_;                   // by tensor: some destination is all of it
  struct DeviceState;
  std::unique_ptr<DeviceState> dev_;  // null without device destinations
  std::vector<Slot> slots_;           // the ring (inflight slots of slot_bytes_), allocated on first use
  std::uint64_t slot_bytes_ = 0;
  struct Busy {
    std::size_t slot = 0;
    bool staged = false;  // a box chunk (else a device chunk bounced through the host)
  };
  std::unordered_map<std::uint32_t, Busy> slot_of_;  // chunk -> its busy slot
  std::uint64_t bounced_bytes_ = 0;
  std::uint64_t staged_bytes_ = 0;
  std::uint64_t scattered_bytes_ = 0;
  std::uint64_t digested_bytes_ = 0;
  std::uint64_t ring_bytes_ = 0;
  bool scatter_reads_ = true;
  bool digest_ = true;  // the pull checks chunks: ask the path for digests
  std::unordered_map<std::uint32_t, std::vector<transport::Piece>> scattered_;  // chunk -> pieces, while read
};

}  // namespace tensorhub::transfer
