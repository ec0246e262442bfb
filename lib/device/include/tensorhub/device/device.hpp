// lib/device: one interface for device memory, two backends.
//
//   cuda      the CUDA runtime (built when the toolkit is found, TENSORHUB_CUDA=AUTO|ON|OFF):
//             cudaMalloc, cudaMemcpyAsync on non-blocking streams, events, pointer queries
//             (cudaPointerGetAttributes + cuMemGetAddressRange, so a pointer into any
//             allocation, e.g. a PyTorch caching-allocator tensor, maps to its allocation),
//             CUDA IPC handles, and an XXH3-64 kernel.
//   emulated  CPU only, every machine: device addresses lie in a reserved PROT_NONE range, so a
//             host dereference of a device pointer crashes (SIGSEGV); the bytes live in a memfd
//             mapped elsewhere that only the backend's own functions touch. IPC across processes
//             through the memfd. Stream work is deferred until the stream (or an event recorded
//             on it) is synchronized, so a missing synchronization shows as stale data.
//
// Errors: DeviceError for a failed device call (CUDA error name and text in the message),
// UserError for a bad argument (a host pointer where a device pointer is needed, a range past
// its allocation, a malformed IPC handle).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace tensorhub::device {

enum class BackendKind : std::uint8_t { kEmulated = 1, kCuda = 2 };
std::string_view to_string(BackendKind kind);

enum class CopyKind { kHostToDevice, kDeviceToHost, kDeviceToDevice };

// What a pointer is, for the device that answers: device memory of this backend (an allocation
// of it or an imported IPC mapping) or not; for device memory, the whole allocation around it.
struct PointerInfo {
  bool is_device = false;
  int ordinal = -1;
  void* base = nullptr;
  std::size_t size = 0;
};

// An exported allocation: small, trivially serialisable (encode/decode), valid on the same host
// while the exporting process keeps the allocation. `offset` is where the exported pointer lies
// in the allocation (a tensor inside a caching-allocator block). `bytes`: the backend's handle
// (cuda: cudaIpcMemHandle_t; emulated: pid, fd, inode and device of the memfd).
// Future: CUDA VMM / fabric handles (cuMemExportToShareableHandle) for memory allocated with
// cuMemCreate and for multi-node NVLink; they would use the same struct with another kind tag.
struct IpcHandle {
  BackendKind backend = BackendKind::kEmulated;
  std::int32_t ordinal = 0;
  std::uint64_t size = 0;
  std::uint64_t offset = 0;
  std::array<std::uint8_t, 64> bytes{};

  [[nodiscard]] std::string encode() const;        // "thipc1:" + hex, 178 characters
  static IpcHandle decode(std::string_view text);  // throws UserError when malformed
};

namespace detail {
class StreamState {
 public:
  virtual ~StreamState() = default;
  virtual void synchronize() = 0;
};
class EventState {
 public:
  virtual ~EventState() = default;
  virtual void record(StreamState& stream) = 0;
  virtual void synchronize() = 0;
  virtual bool query() = 0;                       // complete? (never blocks on the cuda backend)
  virtual void wait_on(StreamState& stream) = 0;  // later work on `stream` waits for the event
};
}  // namespace detail

// An ordered queue of device work (RAII: destroys the backend stream; queued work completes).
class Stream {
 public:
  explicit Stream(std::unique_ptr<detail::StreamState> state) : state_(std::move(state)) {}
  void synchronize() { state_->synchronize(); }
  detail::StreamState& state() { return *state_; }

 private:
  std::unique_ptr<detail::StreamState> state_;
};

// A marker in a stream (RAII).
class Event {
 public:
  explicit Event(std::unique_ptr<detail::EventState> state) : state_(std::move(state)) {}
  void record(Stream& stream) { state_->record(stream.state()); }
  void synchronize() { state_->synchronize(); }
  bool ready() { return state_->query(); }
  void make_wait(Stream& stream) { state_->wait_on(stream.state()); }

 private:
  std::unique_ptr<detail::EventState> state_;
};

class Device;

// An owned device allocation (RAII: freed by the device that made it, which must outlive it).
class Buffer {
 public:
  Buffer() = default;
  Buffer(Device* device, void* ptr, std::size_t size) : device_(device), ptr_(ptr), size_(size) {}
  Buffer(Buffer&& o) noexcept;
  Buffer& operator=(Buffer&& o) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer();
  [[nodiscard]] void* get() const { return ptr_; }
  [[nodiscard]] std::size_t size() const { return size_; }

 private:
  void reset() noexcept;
  Device* device_ = nullptr;
  void* ptr_ = nullptr;
  std::size_t size_ = 0;
};

// An imported IPC allocation (RAII: closed on destruction). data() is the exported pointer.
class IpcMapping {
 public:
  IpcMapping() = default;
  IpcMapping(Device* device, void* base, std::size_t size, std::size_t offset)
      : device_(device), base_(base), size_(size), offset_(offset) {}
  IpcMapping(IpcMapping&& o) noexcept;
  IpcMapping& operator=(IpcMapping&& o) noexcept;
  IpcMapping(const IpcMapping&) = delete;
  IpcMapping& operator=(const IpcMapping&) = delete;
  ~IpcMapping();
  [[nodiscard]] void* base() const { return base_; }
  [[nodiscard]] void* data() const { return static_cast<std::uint8_t*>(base_) + offset_; }
  [[nodiscard]] std::size_t size() const { return size_; }

 private:
  void reset() noexcept;
  Device* device_ = nullptr;
  void* base_ = nullptr;
  std::size_t size_ = 0;
  std::size_t offset_ = 0;
};

// Page-locked host memory from a device (RAII: freed by the device that made it, which must
// outlive it), for staging copies: the cuda backend's cudaHostAlloc (DMA at full speed, no
// driver bounce); the emulated backend's page-aligned anonymous memory. Host memory: the CPU may
// read and write it.
class HostBuffer {
 public:
  HostBuffer() = default;
  HostBuffer(Device* device, void* ptr, std::size_t size) : device_(device), ptr_(ptr), size_(size) {}
  HostBuffer(HostBuffer&& o) noexcept;
  HostBuffer& operator=(HostBuffer&& o) noexcept;
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;
  ~HostBuffer();
  [[nodiscard]] void* get() const { return ptr_; }
  [[nodiscard]] std::size_t size() const { return size_; }

 private:
  void reset() noexcept;
  Device* device_ = nullptr;
  void* ptr_ = nullptr;
  std::size_t size_ = 0;
};

class Device {
 public:
  virtual ~Device() = default;
  [[nodiscard]] virtual BackendKind kind() const noexcept = 0;
  [[nodiscard]] virtual int ordinal() const noexcept = 0;
  [[nodiscard]] virtual std::string describe() const = 0;  // e.g. "cuda:0 NVIDIA H200 (sm_90, 139 GiB)"

  Buffer allocate(std::size_t bytes);
  // Pinned host memory (HostBuffer); UserError for 0 bytes, DeviceError when the backend fails.
  HostBuffer allocate_host(std::size_t bytes);
  virtual Stream create_stream() = 0;
  virtual Event create_event() = 0;

  // Queue a copy on `stream`; `src` (host memory for kHostToDevice) must stay valid and
  // unchanged, and `dst` must not be read, until the stream or a later event is synchronized.
  virtual void copy_async(void* dst, const void* src, std::size_t bytes, CopyKind kind, Stream& stream) = 0;
  virtual void fill_async(void* dst, std::uint8_t value, std::size_t bytes, Stream& stream) = 0;

  [[nodiscard]] virtual PointerInfo query(const void* ptr) const = 0;

  // Export the allocation holding `ptr` (any pointer into it) / open another process's export.
  virtual IpcHandle export_ipc(const void* ptr) = 0;
  IpcMapping import_ipc(const IpcHandle& handle);

  // XXH3-64 (XXH3_64bits, seed 0) of each `chunk_bytes` piece of [data, data + bytes) — the last
  // one may be shorter — computed on the device after the work already queued on `stream`.
  // Blocks until the sums are on the host. Equal to XXH3_64bits(piece) on the CPU.
  virtual std::vector<std::uint64_t> xxh3_64_chunks(const void* data, std::size_t bytes, std::size_t chunk_bytes,
                                                    Stream& stream) = 0;

 protected:
  friend class Buffer;
  friend class IpcMapping;
  friend class HostBuffer;
  virtual void* do_allocate(std::size_t bytes) = 0;
  virtual void do_free(void* ptr) noexcept = 0;
  virtual void* do_allocate_host(std::size_t bytes) = 0;
  virtual void do_free_host(void* ptr, std::size_t bytes) noexcept = 0;
  virtual void* do_import(const IpcHandle& handle) = 0;  // returns the allocation base
  virtual void do_close_import(void* base) noexcept = 0;
};

// True when this build contains the cuda backend.
bool cuda_backend_built() noexcept;
// CUDA devices visible to this process (0 without the cuda backend, a driver or a GPU).
int cuda_device_count() noexcept;

// "cuda": the cuda backend on device `ordinal` (DeviceError when not built or no device);
// "emulated": the CPU emulation; "auto": cuda when a CUDA device exists, else emulated.
// Anything else: UserError.
std::unique_ptr<Device> make_device(std::string_view which, int ordinal = 0);
// make_device(TENSORHUB_DEVICE, or "auto" when unset or empty).
std::unique_ptr<Device> make_device_from_env(int ordinal = 0);

}  // namespace tensorhub::device
