// The cuda backend (CUDA runtime API; the driver's cuMemGetAddressRange through
// cudaGetDriverEntryPointByVersion, so nothing links libcuda and the binaries start on machines
// without a driver, where cuda_count() is 0).
#include "cuda_device.hpp"

#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "cuda_kernels.hpp"
#include "tensorhub/core/error.hpp"

namespace tensorhub::device::detail {
namespace {

void check(cudaError_t e, const char* call, const std::string& context) {
  if (e == cudaSuccess) return;
  throw DeviceError(std::string("cuda: ") + call + " (" + context + "): " + cudaGetErrorName(e) + ": " +
                    cudaGetErrorString(e));
}

void warn(cudaError_t e, const char* call) noexcept {
  if (e != cudaSuccess) std::fprintf(stderr, "tensorhub: cuda: %s: %s\n", call, cudaGetErrorName(e));
}

class CudaStream final : public StreamState {
 public:
  explicit CudaStream(int device) : device_(device) {
    check(cudaSetDevice(device), "cudaSetDevice", "creating a stream");
    check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags", "creating a stream");
  }
  ~CudaStream() override { warn(cudaStreamDestroy(stream_), "cudaStreamDestroy"); }
  void synchronize() override { check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize", "stream synchronize"); }
  cudaStream_t get() const { return stream_; }
  int device() const { return device_; }

 private:
  int device_;
  cudaStream_t stream_ = nullptr;
};

CudaStream& as_cuda(StreamState& s) {
  auto* c = dynamic_cast<CudaStream*>(&s);
  if (c == nullptr) throw UserError("cuda device: a stream of another device");
  return *c;
}

class CudaEvent final : public EventState {
 public:
  CudaEvent() { check(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming), "cudaEventCreateWithFlags", "event"); }
  ~CudaEvent() override { warn(cudaEventDestroy(event_), "cudaEventDestroy"); }
  void record(StreamState& s) override {
    check(cudaEventRecord(event_, as_cuda(s).get()), "cudaEventRecord", "record");
  }
  void synchronize() override { check(cudaEventSynchronize(event_), "cudaEventSynchronize", "event synchronize"); }
  bool query() override {
    const cudaError_t e = cudaEventQuery(event_);
    if (e == cudaErrorNotReady) return false;
    check(e, "cudaEventQuery", "event query");
    return true;
  }
  void wait_on(StreamState& s) override {
    check(cudaStreamWaitEvent(as_cuda(s).get(), event_, 0), "cudaStreamWaitEvent", "stream wait");
  }

 private:
  cudaEvent_t event_ = nullptr;
};

// CUresult cuMemGetAddressRange(CUdeviceptr* base, size_t* size, CUdeviceptr ptr) (64-bit CUdeviceptr).
using GetAddressRange = int (*)(unsigned long long*, std::size_t*, unsigned long long);

class CudaDevice final : public Device {
 public:
  explicit CudaDevice(int ordinal) : ordinal_(ordinal) {
    const int n = cuda_count();
    if (ordinal < 0 || ordinal >= n) {
      throw DeviceError("device 'cuda': no CUDA device " + std::to_string(ordinal) + " (" + std::to_string(n) +
                        " visible; driver or GPU missing, or CUDA_VISIBLE_DEVICES)");
    }
    check(cudaSetDevice(ordinal), "cudaSetDevice", "opening the device");
    check(cudaGetDeviceProperties(&props_, ordinal), "cudaGetDeviceProperties", "opening the device");
    cudaDriverEntryPointQueryResult q{};
    void* fn = nullptr;
    check(cudaGetDriverEntryPointByVersion("cuMemGetAddressRange", &fn, 12000, cudaEnableDefault, &q),
          "cudaGetDriverEntryPointByVersion", "cuMemGetAddressRange");
    if (q != cudaDriverEntryPointSuccess || fn == nullptr)
      throw DeviceError("cuda: the driver has no cuMemGetAddressRange");
    get_range_ = reinterpret_cast<GetAddressRange>(fn);
  }

  BackendKind kind() const noexcept override { return BackendKind::kCuda; }
  int ordinal() const noexcept override { return ordinal_; }
  std::string describe() const override {
    return "cuda:" + std::to_string(ordinal_) + " " + props_.name + " (sm_" + std::to_string(props_.major) +
           std::to_string(props_.minor) + ", " + std::to_string(props_.totalGlobalMem >> 30) + " GiB)";
  }

  Stream create_stream() override { return Stream(std::make_unique<CudaStream>(ordinal_)); }
  Event create_event() override {
    check(cudaSetDevice(ordinal_), "cudaSetDevice", "creating an event");
    return Event(std::make_unique<CudaEvent>());
  }

  void copy_async(void* dst, const void* src, std::size_t bytes, CopyKind kind, Stream& stream) override {
    if (bytes == 0) return;
    const cudaMemcpyKind k = kind == CopyKind::kHostToDevice   ? cudaMemcpyHostToDevice
                             : kind == CopyKind::kDeviceToHost ? cudaMemcpyDeviceToHost
                                                               : cudaMemcpyDeviceToDevice;
    check(cudaMemcpyAsync(dst, src, bytes, k, as_cuda(stream.state()).get()), "cudaMemcpyAsync",
          std::to_string(bytes) + " bytes");
  }

  void fill_async(void* dst, std::uint8_t value, std::size_t bytes, Stream& stream) override {
    if (bytes == 0) return;
    check(cudaMemsetAsync(dst, value, bytes, as_cuda(stream.state()).get()), "cudaMemsetAsync",
          std::to_string(bytes) + " bytes");
  }

  PointerInfo query(const void* ptr) const override {
    PointerInfo info;
    cudaPointerAttributes a{};
    check(cudaPointerGetAttributes(&a, ptr), "cudaPointerGetAttributes", "pointer query");
    if (a.type != cudaMemoryTypeDevice && a.type != cudaMemoryTypeManaged) return info;
    info.is_device = true;
    info.ordinal = a.device;
    unsigned long long base = 0;
    std::size_t size = 0;
    const int r = get_range_(&base, &size, reinterpret_cast<unsigned long long>(ptr));
    if (r != 0) throw DeviceError("cuda: cuMemGetAddressRange: CUresult " + std::to_string(r));
    info.base = reinterpret_cast<void*>(base);
    info.size = size;
    return info;
  }

  IpcHandle export_ipc(const void* ptr) override {
    const PointerInfo info = query(ptr);
    if (!info.is_device) throw UserError("cuda device: export_ipc of a pointer that is not device memory");
    cudaIpcMemHandle_t h{};
    check(cudaIpcGetMemHandle(&h, info.base), "cudaIpcGetMemHandle",
          "allocation of " + std::to_string(info.size) + " bytes (cudaMallocAsync pool memory cannot be exported)");
    IpcHandle out;
    out.backend = BackendKind::kCuda;
    out.ordinal = info.ordinal;
    out.size = info.size;
    out.offset = static_cast<std::uint64_t>(static_cast<const char*>(ptr) - static_cast<const char*>(info.base));
    static_assert(sizeof(h) <= sizeof(out.bytes));
    std::memcpy(out.bytes.data(), &h, sizeof h);
    return out;
  }

  std::vector<std::uint64_t> xxh3_64_chunks(const void* data, std::size_t bytes, std::size_t chunk_bytes,
                                            Stream& stream) override {
    if (chunk_bytes == 0) throw UserError("device xxh3_64_chunks: chunk_bytes 0");
    std::vector<std::uint64_t> sums;
    if (bytes == 0) return sums;
    // A kernel reading outside device memory would leave the context unusable (a sticky error):
    // check the range first.
    const PointerInfo info = query(data);
    const std::size_t off =
        info.is_device ? static_cast<std::size_t>(static_cast<const char*>(data) - static_cast<const char*>(info.base))
                       : 0;
    if (!info.is_device || bytes > info.size - off) {
      throw UserError("cuda device: xxh3_64_chunks of " + std::to_string(bytes) +
                      " bytes that are not inside one device allocation");
    }
    sums.resize((bytes + chunk_bytes - 1) / chunk_bytes);
    const cudaStream_t s = as_cuda(stream.state()).get();
    Buffer out = allocate(sums.size() * sizeof(std::uint64_t));
    check(cuda::launch_xxh3_chunks(data, bytes, chunk_bytes, static_cast<std::uint64_t*>(out.get()), s),
          "xxh3_chunks kernel launch", std::to_string(sums.size()) + " chunks");
    check(cudaMemcpyAsync(sums.data(), out.get(), sums.size() * sizeof(std::uint64_t), cudaMemcpyDeviceToHost, s),
          "cudaMemcpyAsync", "xxh3 sums to the host");
    check(cudaStreamSynchronize(s), "cudaStreamSynchronize", "xxh3 sums");
    return sums;
  }

 protected:
  void* do_allocate(std::size_t bytes) override {
    check(cudaSetDevice(ordinal_), "cudaSetDevice", "allocate");
    void* p = nullptr;
    check(cudaMalloc(&p, bytes), "cudaMalloc", std::to_string(bytes) + " bytes");
    return p;
  }
  void do_free(void* ptr) noexcept override { warn(cudaFree(ptr), "cudaFree"); }
  void* do_allocate_host(std::size_t bytes) override {
    check(cudaSetDevice(ordinal_), "cudaSetDevice", "allocate_host");
    void* p = nullptr;
    check(cudaHostAlloc(&p, bytes, cudaHostAllocPortable), "cudaHostAlloc", std::to_string(bytes) + " bytes");
    return p;
  }
  void do_free_host(void* ptr, std::size_t /*bytes*/) noexcept override { warn(cudaFreeHost(ptr), "cudaFreeHost"); }
  void* do_import(const IpcHandle& handle) override {
    cudaIpcMemHandle_t h{};
    std::memcpy(&h, handle.bytes.data(), sizeof h);
    check(cudaSetDevice(ordinal_), "cudaSetDevice", "import_ipc");
    void* p = nullptr;
    check(cudaIpcOpenMemHandle(&p, h, cudaIpcMemLazyEnablePeerAccess), "cudaIpcOpenMemHandle",
          "an allocation of " + std::to_string(handle.size) + " bytes on device " + std::to_string(handle.ordinal) +
              " (not in the exporting process itself)");
    return p;
  }
  void do_close_import(void* base) noexcept override { warn(cudaIpcCloseMemHandle(base), "cudaIpcCloseMemHandle"); }

 private:
  int ordinal_;
  cudaDeviceProp props_{};
  GetAddressRange get_range_ = nullptr;
};

}  // namespace

bool cuda_built() noexcept { return true; }

int cuda_count() noexcept {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();  // clear the sticky "no driver" error
    return 0;
  }
  return n;
}

std::unique_ptr<Device> make_cuda_device(int ordinal) { return std::make_unique<CudaDevice>(ordinal); }

}  // namespace tensorhub::device::detail
