// `device_ipc` backend: same-host reads of device memory through the device's IPC handles (CUDA
// IPC; the emulated device's memfds): the reader opens the holder's allocation once and copies
// device-to-device into device buffers (NVLink / PCIe peer on real GPUs) or device-to-host into
// host buffers; the holder takes no part. See share/doc/transport-device.md.
//
//  * endpoint()  "dipc:<backend>:" + the cma endpoint of this process (codec.hpp)
//  * reaches()   the same kernel (boot id), pid namespace and device backend
//  * expose()    device memory (MemoryKind::kCuda) of this transport's device only: exports the
//                allocation holding each range (Device::export_ipc) and takes a slot of a
//                generation table (cma/generation_table.hpp) for the call's ranges; descriptor =
//                address + size + slot + generation + IPC handle
//  * can_read_into()  device memory (D2D) and host memory (D2H)
//  * post/poll   device copies on the reader's streams, chunked, driven by poll() (reads.hpp)
//
// Failure model, as cma's (share/doc/transport-cma.md): a holder seen dead on its pidfd before or
// after a chunk, or whose exposure was withdrawn (generation word, read with process_vm_readv,
// so the reader needs the same ptrace read access as cma), ends its reads ok=false; a recycled
// pid is never trusted (start time). A completion is handed out only when no copy of that read
// is still queued: a reader's buffer is never written after its read completed.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "tensorhub/device/device.hpp"
#include "tensorhub/transport/transport.hpp"

namespace tensorhub::transport {
namespace cma {
class GenerationTable;
}
namespace device_ipc {
class Reads;
}

struct DeviceIpcOptions {
  // Bytes per device copy (liveness and the exposure are checked between chunks).
  std::uint64_t chunk = 64ull << 20;
  // Streams the reads are spread over (one read is on one stream).
  std::uint32_t streams = 2;

  // Defaults, with TENSORHUB_DEVICE_IPC_CHUNK and TENSORHUB_DEVICE_IPC_STREAMS applied
  // (share/doc/environment.md); throws UserError naming a malformed variable.
  static DeviceIpcOptions from_env();
};

class DeviceIpcTransport final : public Transport {
 public:
  // `device` (not owned) must outlive the transport and every Exposure it returns. Throws
  // TransportError without /proc (no host identity).
  explicit DeviceIpcTransport(device::Device& device, DeviceIpcOptions options = DeviceIpcOptions::from_env());
  ~DeviceIpcTransport() override;
  DeviceIpcTransport(const DeviceIpcTransport&) = delete;
  DeviceIpcTransport& operator=(const DeviceIpcTransport&) = delete;

  std::string_view name() const override { return "device_ipc"; }
  const std::string& endpoint() const override { return endpoint_; }
  bool reaches(std::string_view endpoint) const override;
  // UserError for a range that is not device memory of this device.
  std::unique_ptr<Exposure> expose(std::span<const MemoryRange> ranges) override;
  bool can_expose(const MemoryRange& range) const override;
  bool can_read_into(std::string_view endpoint, std::string_view descriptor, MemoryKind dst) const override;
  // Throws TransportError for a malformed endpoint or descriptor, a holder on another host, pid
  // namespace or backend, a read past the end of the region, or a destination that is not
  // `dst_memory` memory (device memory of this device for kCuda; not device memory for kHost).
  void post(const ReadOp& op) override;
  void poll(std::vector<Completion>& out) override;
  std::size_t in_flight() const override;

  const DeviceIpcOptions& options() const { return options_; }
  // Holder allocations opened and cached now (closed by poll() once idle and withdrawn).
  std::size_t cached_imports() const;

 private:
  device::Device& device_;
  DeviceIpcOptions options_;
  std::string boot_id_;
  std::uint64_t pid_ns_ = 0;
  int pid_ = 0;
  std::uint64_t start_time_ = 0;
  std::shared_ptr<cma::GenerationTable> table_;  // shared with the exposures
  std::string endpoint_;
  std::unique_ptr<device_ipc::Reads> reads_;
};

}  // namespace tensorhub::transport
