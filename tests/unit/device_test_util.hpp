// Device fixtures of the MPI-free hub tests (label gpu-emu): device tensors on one shared
// emulated device (addresses the host cannot touch: any host access of them crashes the test),
// and `DevicePathTransport`, an in-process data path that exposes host and device memory and
// reads with the device's copies: into device destinations directly when `direct`, else it
// answers can_read_into(kCuda) false, like a host-only path (the reader then bounces). It can
// fail reads of some chunks and slow every read down.
#pragma once

#include <atomic>
#include <chrono>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "hub_test_util.hpp"
#include "tensorhub/device/device.hpp"
#include "tensorhub/transport/descriptor.hpp"

namespace tensorhub::test {

class DevicePathTransport final : public transport::Transport {
 public:
  DevicePathTransport(std::string name, device::Device& dev, bool direct)
      : endpoint_("local:" + std::move(name)), dev_(dev), direct_(direct), stream_(dev.create_stream()) {}

  // Reads of region offsets in `bad` fail (completion ok=false); every read waits `delay`.
  std::set<std::uint64_t> fail_offsets;
  std::chrono::milliseconds delay{0};
  std::atomic<std::uint64_t> device_dst_reads{0};

  std::string_view name() const override { return "local"; }
  const std::string& endpoint() const override { return endpoint_; }
  bool reaches(std::string_view e) const override { return e.starts_with("local:"); }
  bool can_expose(const transport::MemoryRange&) const override { return true; }
  bool can_read_into(std::string_view, std::string_view, MemoryKind dst) const override {
    return dst == MemoryKind::kHost || direct_;
  }
  std::unique_ptr<transport::Exposure> expose(std::span<const transport::MemoryRange> ranges) override {
    std::vector<std::string> out;
    for (const auto& r : ranges) {
      out.push_back(transport::encode_region(r.base, r.bytes) + (r.memory == MemoryKind::kCuda ? "#cuda" : ""));
    }
    return std::make_unique<Exposed>(std::move(out));
  }
  void post(const transport::ReadOp& op) override {
    if (op.dst_memory == MemoryKind::kCuda && !direct_) throw TransportError("host-only path: device destination");
    std::string d = op.descriptor;
    const bool src_dev = d.ends_with("#cuda");
    if (src_dev) d.resize(d.size() - 5);
    const auto r = transport::decode_region(d);
    if (delay.count() > 0) std::this_thread::sleep_for(delay);
    if (fail_offsets.count(op.offset) != 0 || op.offset + op.length > r.bytes) {
      done_.push_back(transport::Completion{op.tag, false, "injected read failure"});
      return;
    }
    const auto* src = reinterpret_cast<const unsigned char*>(r.address) + op.offset;
    const bool dst_dev = op.dst_memory == MemoryKind::kCuda;
    if (!src_dev && !dst_dev) {
      std::memcpy(op.dst, src, op.length);
    } else {
      const auto kind = !src_dev  ? device::CopyKind::kHostToDevice
                        : dst_dev ? device::CopyKind::kDeviceToDevice
                                  : device::CopyKind::kDeviceToHost;
      dev_.copy_async(op.dst, src, op.length, kind, stream_);
      stream_.synchronize();
      if (dst_dev) ++device_dst_reads;
    }
    done_.push_back(transport::Completion{op.tag, true, {}});
  }
  void poll(std::vector<transport::Completion>& out) override {
    while (!done_.empty()) {
      out.push_back(done_.front());
      done_.pop_front();
    }
  }
  std::size_t in_flight() const override { return done_.size(); }

 private:
  class Exposed final : public transport::Exposure {
   public:
    explicit Exposed(std::vector<std::string> d) : d_(std::move(d)) {}
    const std::vector<std::string>& descriptors() const override { return d_; }

   private:
    std::vector<std::string> d_;
  };
  std::string endpoint_;
  device::Device& dev_;
  bool direct_;
  device::Stream stream_;
  std::deque<transport::Completion> done_;
};

// `count` device tensors "w<t>" of `bytes` each on `dev`, with host mirrors to fill and check.
struct DeviceBuffers {
  device::Device& dev;
  std::vector<device::Buffer> bufs;
  std::vector<Tensor> tensors;

  DeviceBuffers(device::Device& d, std::size_t count, std::uint64_t bytes) : dev(d) {
    for (std::size_t t = 0; t < count; ++t) {
      bufs.push_back(dev.allocate(bytes));
      Tensor x =
          host_tensor("w" + std::to_string(t), DType::kF32, {static_cast<std::int64_t>(bytes / 4)}, bufs.back().get());
      x.memory = MemoryKind::kCuda;
      tensors.push_back(x);
    }
  }
  // Copies `host` (e.g. Buffers::data) into the device tensors / fills them with `byte`.
  void upload(const Buffers& host) {
    auto s = dev.create_stream();
    for (std::size_t t = 0; t < bufs.size(); ++t)
      dev.copy_async(bufs[t].get(), host.data[t].data(), bufs[t].size(), device::CopyKind::kHostToDevice, s);
    s.synchronize();
  }
  void fill(std::uint8_t byte) {
    auto s = dev.create_stream();
    for (auto& b : bufs) dev.fill_async(b.get(), byte, b.size(), s);
    s.synchronize();
  }
  // The device bytes, copied to the host.
  Buffers download() const {
    Buffers out(bufs.size(), bufs.front().size());
    auto s = dev.create_stream();
    for (std::size_t t = 0; t < bufs.size(); ++t)
      dev.copy_async(out.data[t].data(), bufs[t].get(), bufs[t].size(), device::CopyKind::kDeviceToHost, s);
    s.synchronize();
    return out;
  }
};

}  // namespace tensorhub::test
