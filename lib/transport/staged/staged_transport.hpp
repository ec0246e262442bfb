// `staged` backend: device memory of a holder read by any reader through a small ring of pinned
// host slots (share/doc/transport-device.md, "Staged path"). The fallback device path: used for
// a (reader, holder) pair that has no device IPC (other host, other pid namespace) and no
// CUDA-aware ucx/mpi_rma; it comes after them in the preference order.
//
//  * endpoint()  "staged1:<address>:<port>:<pid>:<key>" (codec.hpp): this process's staging
//                server (server.hpp), which listens from construction on
//  * reaches()   any staged endpoint (TCP; a firewalled holder fails its reads as completions)
//  * expose()    device memory of this transport's device only (MemoryKind::kCuda); the first
//                call allocates the ring (slots x slot_bytes, Device::allocate_host) and exposes
//                it on `inner`, the host-path transport the readers read slots with
//  * can_read_into()  host memory only: a device destination goes through the hub's bounce
//                ring (H2D), like every host path
//  * post/poll   reads.hpp
// No full host copy of a region ever exists: at most `slots` slices of it, each while a reader
// reads it. Withdrawal: an Exposure's destructor waits for a device copy of its regions in
// progress; later requests for them are refused.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "tensorhub/device/device.hpp"
#include "tensorhub/transport/transport.hpp"

namespace tensorhub::transport {
namespace staged {
class Server;
class Reads;
}  // namespace staged

struct StagedOptions {
  std::uint64_t slot_bytes = 8ull << 20;     // TENSORHUB_STAGED_SLOT
  std::uint32_t slots = 4;                   // TENSORHUB_STAGED_SLOTS
  std::uint32_t depth = 2;                   // TENSORHUB_STAGED_DEPTH: pieces of one read in flight
  std::chrono::milliseconds timeout{10000};  // TENSORHUB_STAGED_TIMEOUT_MS
  std::string address;                       // TENSORHUB_STAGED_ADDRESS (empty: this host's name)
  std::string via = "cma,ucx";               // TENSORHUB_STAGED_VIA: the inner host paths

  // Defaults with the variables applied (share/doc/environment.md); UserError for a bad one.
  static StagedOptions from_env();
};

class StagedTransport final : public Transport {
 public:
  // `device` (not owned) must outlive the transport and its exposures. `make_inner` builds the
  // host-path transport for the ring, on first use (a process that never stages pays nothing).
  StagedTransport(device::Device& device, std::function<std::unique_ptr<Transport>()> make_inner,
                  StagedOptions options = StagedOptions::from_env());
  ~StagedTransport() override;
  StagedTransport(const StagedTransport&) = delete;
  StagedTransport& operator=(const StagedTransport&) = delete;

  std::string_view name() const override { return "staged"; }
  const std::string& endpoint() const override { return endpoint_; }
  bool reaches(std::string_view endpoint) const override;
  // UserError for a range that is not device memory of this device.
  std::unique_ptr<Exposure> expose(std::span<const MemoryRange> ranges) override;
  bool can_expose(const MemoryRange& range) const override;
  // TransportError for a device destination, a malformed endpoint or descriptor, a read past
  // the region's end.
  void post(const ReadOp& op) override;
  void poll(std::vector<Completion>& out) override;
  std::size_t in_flight() const override;

  const StagedOptions& options() const { return options_; }
  // Requests this process's server answered with a slot / refused.
  std::uint64_t served() const;
  std::uint64_t refused() const;

 private:
  Transport& inner();
  void ensure_ring();

  device::Device& device_;
  std::function<std::unique_ptr<Transport>()> make_inner_;
  StagedOptions options_;
  std::unique_ptr<Transport> inner_;
  device::HostBuffer ring_;
  std::unique_ptr<Exposure> ring_exposure_;
  std::shared_ptr<staged::Server> server_;  // shared with the exposures
  std::string endpoint_;
  std::unique_ptr<staged::Reads> reads_;
};

}  // namespace tensorhub::transport
