#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <string>

#include "bench_device.hpp"
#include "cuda_kernels.hpp"
#include "tensorhub/core/error.hpp"
#include "xxh3_core.hpp"

namespace tensorhub::bench {
namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw DeviceError(std::string("bench_device: ") + what + ": " + cudaGetErrorName(e));
}

template <class F>
std::vector<double> repeat(const Options& o, F&& once) {
  once();  // warm-up (first touch, lazy peer mappings)
  std::vector<double> gbps;
  for (int r = 0; r < o.reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    once();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    gbps.push_back(static_cast<double>(o.bytes) / s / 1e9);
  }
  return gbps;
}

// Pinned host memory (RAII).
class Pinned {
 public:
  explicit Pinned(std::size_t bytes) { check(cudaMallocHost(&p_, bytes), "cudaMallocHost"); }
  ~Pinned() { (void)cudaFreeHost(p_); }
  Pinned(const Pinned&) = delete;
  Pinned& operator=(const Pinned&) = delete;
  std::uint8_t* get() const { return static_cast<std::uint8_t*>(p_); }

 private:
  void* p_ = nullptr;
};

}  // namespace

std::vector<double> d2d_memcpy(device::Device& dev, const void* src, void* dst, const Options& o) {
  (void)dev;
  return repeat(o, [&] {
    check(cudaMemcpy(dst, src, o.bytes, cudaMemcpyDeviceToDevice), "cudaMemcpy D2D");
    check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  });
}

std::vector<double> copy_kernel(device::Device& dev, const void* src, void* dst, const Options& o) {
  (void)dev;
  return repeat(o, [&] {
    check(device::cuda::launch_copy(dst, src, o.bytes, nullptr), "copy kernel");
    check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  });
}

std::vector<double> xxh3(device::Device& dev, const void* src, const Options& o) {
  auto stream = dev.create_stream();
  return repeat(o, [&] { (void)dev.xxh3_64_chunks(src, o.bytes, o.chunk, stream); });
}

std::vector<double> d2h_h2d_memcpy(device::Device& dev, const void* src, void* dst, const Options& o) {
  (void)dev;
  Pinned host(o.bytes);
  return repeat(o, [&] {
    check(cudaMemcpy(host.get(), src, o.bytes, cudaMemcpyDeviceToHost), "cudaMemcpy D2H");
    check(cudaMemcpy(dst, host.get(), o.bytes, cudaMemcpyHostToDevice), "cudaMemcpy H2D");
  });
}

std::vector<double> staged_ring(device::Device& dev, const void* src, void* dst, const Options& o) {
  Pinned ring(2 * o.slot);
  auto out = dev.create_stream();  // device -> slot (the holder's side)
  auto in = dev.create_stream();   // slot -> device (the reader's side)
  device::Event filled[2] = {dev.create_event(), dev.create_event()};
  device::Event drained[2] = {dev.create_event(), dev.create_event()};
  const auto* s = static_cast<const std::uint8_t*>(src);
  auto* d = static_cast<std::uint8_t*>(dst);
  return repeat(o, [&] {
    std::size_t i = 0;
    for (std::size_t off = 0; off < o.bytes; off += o.slot, ++i) {
      const std::size_t n = std::min(o.slot, o.bytes - off);
      const int k = static_cast<int>(i % 2);
      if (i >= 2) drained[k].make_wait(out);  // the slot's previous bytes were read
      dev.copy_async(ring.get() + k * o.slot, s + off, n, device::CopyKind::kDeviceToHost, out);
      filled[k].record(out);
      filled[k].make_wait(in);
      dev.copy_async(d + off, ring.get() + k * o.slot, n, device::CopyKind::kHostToDevice, in);
      drained[k].record(in);
    }
    in.synchronize();
    out.synchronize();
  });
}

std::uint64_t digest(device::Device& dev, const void* data, const Options& o) {
  auto stream = dev.create_stream();
  const auto sums = dev.xxh3_64_chunks(data, o.bytes, o.chunk, stream);
  return device::xxh3::hash(reinterpret_cast<const std::uint8_t*>(sums.data()), sums.size() * sizeof(std::uint64_t));
}

std::vector<double> ipc_pull(const device::IpcHandle& handle, std::uint64_t want, const Options& o, bool* verified) {
  auto dev = device::make_device("cuda", handle.ordinal);
  device::IpcMapping m = dev->import_ipc(handle);
  if (m.size() - handle.offset < o.bytes) throw UserError("bench_device: the exported range is smaller than --bytes");
  device::Buffer dst = dev->allocate(o.bytes);
  auto stream = dev->create_stream();
  auto gbps = repeat(o, [&] {
    dev->copy_async(dst.get(), m.data(), o.bytes, device::CopyKind::kDeviceToDevice, stream);
    stream.synchronize();
  });
  *verified = digest(*dev, dst.get(), o) == want;
  return gbps;
}

}  // namespace tensorhub::bench
