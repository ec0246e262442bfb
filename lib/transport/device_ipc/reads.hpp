// The reader side of DeviceIpcTransport: reads are device copies (D2D into device memory, D2H
// into host memory) from the holder's allocation, opened once per (holder, allocation) and
// cached, on a few streams of the reader's device, driven by poll() (no thread of its own).
//
// A read is copied in chunks of `chunk` bytes, one at a time, each followed by an event. Before
// the first chunk the holder is checked alive (its pidfd) and its exposure current (the
// generation word of its slot, read as cma reads it); after each chunk's event completed both
// are checked again, and a read whose holder died or whose exposure was withdrawn meanwhile
// completes ok=false. A completion, ok or not, is reported only once no copy of the read is
// queued any more, so the destination is never written after its completion was handed out.
// Device copies cannot hang on a dead holder (the mapping keeps the memory: emulated, the memfd;
// cuda, the driver's reference), so there is no deadline.
//
// Imports are closed when no read uses them and their exposure is gone: poll() sweeps the idle
// ones every kSweepInterval, checking the generation word of the last exposure read through
// each (a holder that unpublished and freed its memory is not kept mapped by its readers).
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "cma/holder.hpp"
#include "device_ipc/codec.hpp"
#include "tensorhub/device/device.hpp"
#include "tensorhub/transport/transport.hpp"

namespace tensorhub::transport::device_ipc {

class Reads {
 public:
  Reads(device::Device& device, std::uint32_t streams, std::uint64_t chunk);
  ~Reads();  // waits for the copies in flight
  Reads(const Reads&) = delete;
  Reads& operator=(const Reads&) = delete;

  // `endpoint` and `d` decoded and checked by the caller (same host and backend, read inside the
  // region, destination of the right kind). `self`: the holder is this process.
  void post(const std::string& endpoint_text, const EndpointText& endpoint, const DescriptorText& d, const ReadOp& op,
            bool self);
  void poll(std::vector<Completion>& out);
  std::size_t in_flight() const { return jobs_.size() + done_.size(); }
  std::size_t cached_imports() const { return mappings_.size(); }

  static constexpr std::chrono::milliseconds kSweepInterval{100};

 private:
  struct Job {
    std::shared_ptr<cma::Holder> holder;
    std::shared_ptr<device::IpcMapping> mapping;  // null when reading this process's own memory
    std::string mapping_key;
    const std::uint8_t* src = nullptr;  // device address of the read's first byte, in this process
    std::uint8_t* dst = nullptr;
    device::CopyKind kind = device::CopyKind::kDeviceToDevice;
    std::uint64_t length = 0;
    std::uint64_t copied = 0;  // bytes whose copy was queued
    std::uint32_t slot = 0;
    std::uint64_t generation = 0;
    std::uint64_t tag = 0;
    std::size_t stream = 0;
    std::unique_ptr<device::Event> event;
  };

  std::shared_ptr<cma::Holder> holder_for(const std::string& text, const EndpointText& endpoint);
  // An import: the mapping and the exposure last read through it.
  struct Cached {
    std::shared_ptr<device::IpcMapping> mapping;
    std::shared_ptr<cma::Holder> holder;
    std::uint32_t slot = 0;
    std::uint64_t generation = 0;
  };

  std::shared_ptr<device::IpcMapping> mapping_for(const std::string& key, const device::IpcHandle& handle,
                                                  const Job& job);
  void sweep();
  // "" when the holder is alive and the exposure current, else why not.
  static std::string check(const Job& job);
  void next_chunk(Job& job);
  void finish(Job& job, std::string error);

  device::Device& device_;
  std::uint64_t chunk_;
  // Declaration order = reverse destruction order: mappings outlive the streams' queued copies.
  std::unordered_map<std::string, std::shared_ptr<cma::Holder>> holders_;  // by endpoint text
  std::unordered_map<std::string, Cached> mappings_;                       // by holder + allocation
  std::chrono::steady_clock::time_point last_sweep_ = std::chrono::steady_clock::now();
  std::vector<device::Stream> streams_;
  std::size_t next_stream_ = 0;
  std::deque<Job> jobs_;
  std::vector<Completion> done_;
};

}  // namespace tensorhub::transport::device_ipc
