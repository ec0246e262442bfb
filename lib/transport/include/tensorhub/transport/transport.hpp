// The data-plane interface. A Transport does two things:
//   * expose(): makes local memory readable by peers and returns an opaque descriptor that the
//     coordinator stores as part of a reference (it never interprets it);
//   * post()/poll(): nonblocking one-sided reads of a peer's exposed memory into local buffers.
// Backends live in sibling folders with private headers: local/ (memcpy inside one process, for
// tests), cma/ (same-host process_vm_readv) and ucx/ (UCP) in the target tensorhub_transport, which needs no MPI;
// mpi_rma/ (MPI window + MPI_Rget) in tensorhub_transport_mpi; multi/ (several of them at once: every data path of a
// process, the best one per peer) in tensorhub_transport. Create one with make_transport
// (tensorhub/transport/factory.hpp, target tensorhub_transport_factory). A transport is used from one thread at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tensorhub/core/checksum.hpp"
#include "tensorhub/core/dtype.hpp"

namespace tensorhub::transport {

struct MemoryRange {
  void* base = nullptr;
  std::uint64_t bytes = 0;
  MemoryKind memory = MemoryKind::kHost;
};

// Memory exposed for remote reads until this object is destroyed: one descriptor per range
// passed to expose(), in the same order.
class Exposure {
 public:
  virtual ~Exposure() = default;
  virtual const std::vector<std::string>& descriptors() const = 0;
};

// A part of a scattered read (ReadOp::pieces): the next `length` bytes of the read land at
// dst + `offset`.
struct Piece {
  std::uint64_t offset = 0;
  std::uint64_t length = 0;
  bool operator==(const Piece&) const = default;
};

struct ReadOp {
  std::string endpoint;    // the holder's Transport::endpoint()
  std::string descriptor;  // the holder's Exposure::descriptor()
  std::uint64_t offset = 0;
  void* dst = nullptr;
  std::uint64_t length = 0;
  std::uint64_t tag = 0;  // returned in the Completion
  // What `dst` is: host memory, or device memory (device_ipc D2D; ucx when CUDA-aware). A path
  // that cannot write `dst_memory` throws TransportError from post() (can_read_into says first).
  MemoryKind dst_memory = MemoryKind::kHost;
  // Empty: the read lands contiguously at dst. Otherwise its bytes, in order, land piece by
  // piece (a chunk of a box read whose rows are strided in the destination: one strided write
  // instead of a staging copy); the lengths sum to `length`. Only for a path whose can_scatter
  // said yes; others throw TransportError from post().
  std::vector<Piece> pieces{};
  // Set: the reader wants this checksum of the bytes as they landed in host memory (in piece
  // order for a scattered read). A path that copies with the CPU (cma, local) computes it right
  // after each part of the read is copied, while that part is still in cache, and returns it in
  // Completion::digest: the reader then needs no second pass over the bytes. Other paths ignore
  // it (their completions carry no digest, and the reader hashes the bytes itself).
  std::optional<ChecksumAlgorithm> digest{};
};

struct Completion {
  std::uint64_t tag = 0;
  bool ok = true;
  std::string error;  // set when !ok
  // ok and ReadOp::digest set, on a path that computes it: the checksum of the landed bytes.
  std::optional<std::uint64_t> digest{};
};

class Transport {
 public:
  virtual ~Transport() = default;
  virtual std::string_view name() const = 0;
  // How peers reach this process; stored by the coordinator with the worker's registration.
  virtual const std::string& endpoint() const = 0;
  // Can this transport read from `endpoint` at all? (mpi_rma: same MPI job only.)
  virtual bool reaches(std::string_view endpoint) const = 0;
  // Exposes all `ranges` at once, so a backend can coalesce them into few registrations.
  virtual std::unique_ptr<Exposure> expose(std::span<const MemoryRange> ranges) = 0;
  // Could expose() take `range`? (Default: host memory. mpi_rma with a pool: only pool memory.)
  // The `multi` transport exposes each range on every path that says yes.
  virtual bool can_expose(const MemoryRange& range) const { return range.memory == MemoryKind::kHost; }
  // Can a read of `descriptor` (a region of the holder at `endpoint`) land directly in `dst`
  // memory? Host-only paths: host memory only. `multi` answers for the path it would route to.
  virtual bool can_read_into(std::string_view endpoint, std::string_view descriptor, MemoryKind dst) const {
    (void)endpoint;
    (void)descriptor;
    return dst == MemoryKind::kHost;
  }
  // Can a read of `descriptor` of `endpoint` land scattered (ReadOp::pieces) in host memory?
  // cma: local iovecs; mpi_rma: an indexed origin datatype; local: memcpy per piece. `multi`
  // answers for the paths it would route to.
  virtual bool can_scatter(std::string_view endpoint, std::string_view descriptor) const {
    (void)endpoint;
    (void)descriptor;
    return false;
  }
  // Starts a read; throws TransportError if it cannot even be started (also for a destination
  // memory kind this path cannot write: see can_read_into).
  virtual void post(const ReadOp& op) = 0;
  // Appends finished reads to `out`; never blocks.
  virtual void poll(std::vector<Completion>& out) = 0;
  virtual std::size_t in_flight() const = 0;
  // Memory from the backend's registered pool, if it has one (mpi_rma with a pool: the
  // MPI_Win_allocate window). Backends without a pool throw UserError.
  virtual void* allocate(std::uint64_t bytes);
  virtual void deallocate(void* p);
  // Releases what needs every process of a job at once (mpi_rma: frees the window). Collective
  // for such backends; the destructor does the same without reporting errors.
  virtual void close() {}
  // Waits until every live process of the job reached this call; false if this transport has no
  // fault-aware way to do so (the caller then uses its own communicator's barrier).
  virtual bool job_barrier() { return false; }
};

}  // namespace tensorhub::transport
