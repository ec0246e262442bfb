// `cma` backend: same-host one-sided reads with Cross Memory Attach (process_vm_readv): the
// reader's kernel copies straight from the holder's address space, the holder takes no part
// (it may compute, sleep or be stopped). No MPI, no collective, no shared files. See
// share/doc/transport-cma.md.
//
//  * endpoint()  "cma:<host>:<boot id>:<pid ns>:<pid>:<start time>:<table>:<slots>" (codec.hpp)
//  * reaches()   the same kernel (boot id) and the same pid namespace
//  * expose()    no registration: takes a slot of the generation table (generation_table.hpp)
//                for the call's ranges; descriptor = address + length + slot + generation.
//                Calls prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY) so that, under Yama
//                ptrace_scope 1, readers that are not this process's ancestors may read it.
//  * post/poll   queued to worker threads (reads.hpp); poll() never blocks; thread-safe.
//
// Failure model: a killed holder is seen on its pidfd, polled before and after every chunk (its
// reads complete ok=false at once, later ones without being attempted); a recycled pid is never
// read (start time in the endpoint, checked when the pidfd is opened). A hung (stopped) holder
// still serves reads — the kernel copies its memory — and every read is bounded by the
// deadline (CmaOptions::deadline) anyway.
//
// Withdrawal ("no reader reads memory after unpublish returned"). The hub guarantees it first:
// a holder's unpublish waits in the coordinator until every reader released its pins (or was
// declared dead), so no read is in flight when the memory is released. The backend does not
// rely on that alone, because a reader whose pins were dropped (lease expired while it was
// stopped) may still be running: destroying the Exposure zeroes its generation word before it
// returns, and a reader checks the word before its first byte (a withdrawn exposure is not read
// at all) and, in the same syscall, after every chunk (a chunk that overlapped the withdrawal is
// discarded: the read completes ok=false). So at most the one chunk (CmaOptions::chunk) in
// progress at the moment of withdrawal is still copied, and none of its bytes is ever reported
// as read; a read started after unpublish returned touches no exposed byte.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "tensorhub/transport/transport.hpp"

namespace tensorhub::transport {
namespace cma {
class GenerationTable;
class Reads;
}  // namespace cma

struct CmaOptions {
  // A read not done this long after post() completes with ok=false.
  std::chrono::milliseconds deadline{5000};
  // Reader threads (reads run in parallel, one per thread).
  std::uint32_t threads = 2;
  // Bytes per process_vm_readv (the pidfd and the generation are checked between chunks).
  std::uint64_t chunk = 8ull << 20;
  // Bytes per process_vm_readv of a read that asks for a digest (ReadOp::digest): each such part
  // is hashed right after it is copied, while it is still in the core's cache (L2: 1 MiB or
  // more per core on current x86 servers), so the reader makes no second pass over memory.
  std::uint64_t digest_block = 1ull << 20;
  // Bytes per process_vm_readv of a scattered read (ReadOp::pieces): copied into a bounce buffer
  // of this size per reader thread, hashed there when a digest is asked for, then streamed out to
  // the pieces (stream_copy.hpp). It should fit the core's L2 cache: 512 KiB measured best on a
  // 512 KiB-L2 core (bench reshard dim 1: 128 KiB 1.36x, 256 KiB 1.25-1.35x, 512 KiB 1.15-1.16x,
  // 1 MiB 1.18-1.35x a plain pull).
  std::uint64_t bounce_block = 512ull << 10;

  // Defaults, with TENSORHUB_CMA_DEADLINE_MS, TENSORHUB_CMA_THREADS, TENSORHUB_CMA_CHUNK,
  // TENSORHUB_CMA_DIGEST_BLOCK and TENSORHUB_CMA_BOUNCE_BLOCK applied (share/doc/environment.md); throws UserError
  // naming a malformed variable.
  static CmaOptions from_env();
};

class CmaTransport final : public Transport {
 public:
  // Throws TransportError without /proc (no host identity).
  explicit CmaTransport(CmaOptions options = CmaOptions::from_env());
  ~CmaTransport() override;
  CmaTransport(const CmaTransport&) = delete;
  CmaTransport& operator=(const CmaTransport&) = delete;

  std::string_view name() const override { return "cma"; }
  const std::string& endpoint() const override { return endpoint_; }
  bool reaches(std::string_view endpoint) const override;
  std::unique_ptr<Exposure> expose(std::span<const MemoryRange> ranges) override;
  // Throws TransportError for a malformed endpoint or descriptor, a holder on another host or
  // pid namespace, or a read past the end of the region; the holder's failures end as
  // completions.
  // Scattered reads: one contiguous process_vm_readv per bounce block, streamed out to the pieces.
  bool can_scatter(std::string_view endpoint, std::string_view) const override { return reaches(endpoint); }
  void post(const ReadOp& op) override;
  void poll(std::vector<Completion>& out) override;
  std::size_t in_flight() const override;
  // Page-aligned host memory (no pool: any host memory can be exposed).
  void* allocate(std::uint64_t bytes) override;
  void deallocate(void* p) override;

  const CmaOptions& options() const { return options_; }

 private:
  CmaOptions options_;
  std::string boot_id_;
  std::uint64_t pid_ns_ = 0;
  std::shared_ptr<cma::GenerationTable> table_;  // shared with the exposures
  std::string endpoint_;
  std::unique_ptr<cma::Reads> reads_;
};

}  // namespace tensorhub::transport
