// `ucx` backend: one-sided reads over UCX's UCP (ucp_get_nbx), without MPI and without any
// collective, so processes of different jobs read each other's memory and a dead or hung holder
// ends its reads with ok=false instead of hanging the reader. See share/doc/transport-ucx.md.
//
//  * endpoint()  "ucx:<label>:<worker address>": any process can connect with it alone.
//  * expose()    ucp_mem_map of the ranges (adjacent or overlapping ones share one
//                registration); descriptor = address + length + packed remote key.
//  * post/poll   endpoint per peer created on first use, remote keys unpacked once per peer;
//                peer error handling + a per-read deadline (UcxOptions::deadline).
//  * a progress thread drives the worker, so this process's exposed memory is served while its
//    owner computes (over TCP a get needs the target to progress).
//
// Threads: the progress thread and the caller's thread (post/poll/expose) share one UCX worker;
// every UCX call is made under one mutex (the worker is created UCS_THREAD_MODE_SERIALIZED). As
// for every Transport, post/poll/in_flight are for one caller thread at a time.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "tensorhub/transport/transport.hpp"

namespace tensorhub::transport {
namespace ucx {
struct Core;
class Reads;
class ProgressThread;
}  // namespace ucx

// How reads are made (share/doc/transport-ucx.md, "Reads"):
//  * kGet  one-sided ucp_get_nbx: no holder CPU where UCX does it in hardware (RDMA); over TCP
//          UCX emulates it, and a reader killed mid-read can then abort the holder (UCX 1.13);
//  * kAm   active messages served by the holder's progress thread (am_server.hpp): a dead
//          reader fails only its own replies;
//  * kAuto per holder, when its endpoint is created: kGet where the endpoint has a hardware RMA
//          lane (lanes.hpp), kAm everywhere else.
enum class UcxRead { kAuto, kGet, kAm };

struct UcxOptions {
  // A read fails (and its peer is marked dead) once it has waited this long while no other read
  // from the same peer completed. The only defence against a hung peer, which UCX never reports.
  std::chrono::milliseconds deadline{5000};
  // Names this process in peers' error messages; empty: "<hostname>/<pid>".
  std::string label;
  // Serve reads of this process's memory while its thread is elsewhere (needed over TCP).
  bool progress_thread = true;
  UcxRead read = UcxRead::kAuto;
  // Active-message reads: a read is asked for in pieces of at most this many bytes, at most
  // am_window pieces per holder at once. 0: one UCX TCP segment's worth (255 KiB by default), so a
  // reply is one fragment the reader copies straight into place (ucx/tcp_segments.hpp).
  std::uint64_t am_piece = 0;
  std::size_t am_window = 16;

  // Defaults, with TENSORHUB_UCX_DEADLINE_MS (milliseconds > 0), TENSORHUB_UCX_READ
  // (auto|get|am) and TENSORHUB_UCX_AM_PIECE (bytes, 4KiB..16MiB; unset: 0) applied; throws UserError naming
  // the variable on a malformed value (tensorhub/core/env.hpp).
  static UcxOptions from_env();
};

// Counters, for tests and diagnostics.
struct UcxStats {
  std::uint64_t gets = 0;        // reads this process posted as ucp_get_nbx
  std::uint64_t am_reads = 0;    // reads this process posted as active messages
  std::uint64_t am_served = 0;   // pieces of this process's memory it sent to readers
  std::uint64_t am_refused = 0;  // requests it answered with an error (no such region, too many)
  std::uint64_t am_dropped = 0;  // requests it could not answer (malformed, no reply endpoint, full)
  std::size_t am_replies_in_flight = 0;
  std::uint64_t am_piece = 0;  // the piece size this process asks for (UcxOptions::am_piece resolved)
};

class UcxTransport final : public Transport {
 public:
  explicit UcxTransport(UcxOptions options = UcxOptions::from_env());
  ~UcxTransport() override;
  UcxTransport(const UcxTransport&) = delete;
  UcxTransport& operator=(const UcxTransport&) = delete;

  std::string_view name() const override { return "ucx"; }
  const std::string& endpoint() const override { return endpoint_; }
  bool reaches(std::string_view endpoint) const override;
  std::unique_ptr<Exposure> expose(std::span<const MemoryRange> ranges) override;
  // Host memory; CUDA memory only when this UCX is CUDA-aware (UCS_MEMORY_TYPE_CUDA among the
  // context's memory types, checked at run time: Debian's UCX is not, PyPI's libucx-cu* are).
  bool can_expose(const MemoryRange& range) const override;
  bool can_read_into(std::string_view endpoint, std::string_view descriptor, MemoryKind dst) const override;
  // Throws TransportError for a CUDA destination on a UCX that is not CUDA-aware.
  void post(const ReadOp& op) override;
  void poll(std::vector<Completion>& out) override;
  std::size_t in_flight() const override;
  // Page-aligned host memory (no pool: any host memory can be exposed).
  void* allocate(std::uint64_t bytes) override;
  void deallocate(void* p) override;

  const UcxOptions& options() const { return options_; }
  // Is this UCX CUDA-aware (device memory exposed and read directly)?
  bool cuda_aware() const { return cuda_aware_; }
  UcxStats stats() const;

 private:
  UcxOptions options_;
  std::shared_ptr<ucx::Core> core_;  // shared with the exposures
  bool cuda_aware_ = false;
  std::string endpoint_;
  std::unique_ptr<ucx::Reads> reads_;
  std::unique_ptr<ucx::ProgressThread> progress_;  // stopped first
};

}  // namespace tensorhub::transport
