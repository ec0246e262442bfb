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
#include <memory>
#include <string>

#include "tensorhub/transport/transport.hpp"

namespace tensorhub::transport {
namespace ucx {
struct Core;
class Reads;
class ProgressThread;
}  // namespace ucx

struct UcxOptions {
  // A read fails (and its peer is marked dead) once it has waited this long while no other read
  // from the same peer completed. The only defence against a hung peer, which UCX never reports.
  std::chrono::milliseconds deadline{5000};
  // Names this process in peers' error messages; empty: "<hostname>/<pid>".
  std::string label;
  // Serve reads of this process's memory while its thread is elsewhere (needed over TCP).
  bool progress_thread = true;

  // Defaults, with TENSORHUB_UCX_DEADLINE_MS (milliseconds > 0) applied; throws UserError naming
  // the variable on a malformed value (tensorhub/core/env.hpp).
  static UcxOptions from_env();
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

 private:
  UcxOptions options_;
  std::shared_ptr<ucx::Core> core_;  // shared with the exposures
  bool cuda_aware_ = false;
  std::string endpoint_;
  std::unique_ptr<ucx::Reads> reads_;
  std::unique_ptr<ucx::ProgressThread> progress_;  // stopped first
};

}  // namespace tensorhub::transport
