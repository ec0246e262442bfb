// The emulated device: see device.hpp and emulated_arena.hpp.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

#include "emulated_arena.hpp"
#include "emulated_stream.hpp"
#include "tensorhub/core/error.hpp"
#include "tensorhub/device/emulated.hpp"
#include "xxh3_core.hpp"

namespace tensorhub::device {
namespace {

using emulated::Arena;

// What the emulated handle's 64 bytes carry.
struct EmulatedIpc {
  std::int32_t pid;
  std::int32_t fd;
  std::uint64_t inode;
  std::uint64_t dev;
};
static_assert(sizeof(EmulatedIpc) <= sizeof(IpcHandle::bytes));

class EmulatedDevice final : public Device {
 public:
  explicit EmulatedDevice(std::size_t reserve) : arena_(reserve), reserve_(reserve) {}

  BackendKind kind() const noexcept override { return BackendKind::kEmulated; }
  int ordinal() const noexcept override { return 0; }
  std::string describe() const override {
    return "emulated:0 (CPU emulation: PROT_NONE device addresses, memfd backing, " + std::to_string(reserve_ >> 30) +
           " GiB of addresses)";
  }

  Stream create_stream() override { return Stream(std::make_unique<emulated::StreamState>()); }
  Event create_event() override { return Event(std::make_unique<emulated::EventState>()); }

  void copy_async(void* dst, const void* src, std::size_t bytes, CopyKind kind, Stream& stream) override {
    if (bytes == 0) return;
    check_side(dst, kind != CopyKind::kDeviceToHost, "copy destination", bytes);
    check_side(src, kind != CopyKind::kHostToDevice, "copy source", bytes);
    // Addresses are resolved again when the work runs: the allocation may be gone by then.
    emulated::as_emulated(stream.state()).queue()->push([this, dst, src, bytes, kind] {
      std::uint8_t* d = kind == CopyKind::kDeviceToHost ? static_cast<std::uint8_t*>(dst)
                                                        : arena_.resolve(dst, bytes, "copy destination");
      const std::uint8_t* s = kind == CopyKind::kHostToDevice ? static_cast<const std::uint8_t*>(src)
                                                              : arena_.resolve(src, bytes, "copy source");
      std::memmove(d, s, bytes);
    });
  }

  void fill_async(void* dst, std::uint8_t value, std::size_t bytes, Stream& stream) override {
    if (bytes == 0) return;
    check_side(dst, true, "fill destination", bytes);
    emulated::as_emulated(stream.state()).queue()->push([this, dst, value, bytes] {
      std::memset(arena_.resolve(dst, bytes, "fill destination"), value, bytes);
    });
  }

  PointerInfo query(const void* ptr) const override { return arena_.query(ptr); }

  IpcHandle export_ipc(const void* ptr) override {
    std::size_t size = 0;
    std::size_t offset = 0;
    const int fd = arena_.fd_of(ptr, &size, &offset);
    struct stat st {};
    if (::fstat(fd, &st) != 0)
      throw DeviceError(std::string("emulated device: fstat of the memfd: ") + std::strerror(errno));
    const EmulatedIpc e{static_cast<std::int32_t>(::getpid()), fd, static_cast<std::uint64_t>(st.st_ino),
                        static_cast<std::uint64_t>(st.st_dev)};
    IpcHandle h;
    h.backend = BackendKind::kEmulated;
    h.ordinal = 0;
    h.size = size;
    h.offset = offset;
    std::memcpy(h.bytes.data(), &e, sizeof e);
    return h;
  }

  std::vector<std::uint64_t> xxh3_64_chunks(const void* data, std::size_t bytes, std::size_t chunk_bytes,
                                            Stream& stream) override {
    if (chunk_bytes == 0) throw UserError("device xxh3_64_chunks: chunk_bytes 0");
    stream.synchronize();  // after the work already queued, as on a GPU
    std::vector<std::uint64_t> sums;
    if (bytes == 0) return sums;
    const std::uint8_t* p = arena_.resolve(data, bytes, "xxh3_64_chunks data");
    sums.reserve((bytes + chunk_bytes - 1) / chunk_bytes);
    for (std::size_t off = 0; off < bytes; off += chunk_bytes) {
      sums.push_back(xxh3::hash(p + off, std::min(chunk_bytes, bytes - off)));
    }
    return sums;
  }

 protected:
  void* do_allocate(std::size_t bytes) override { return arena_.allocate(bytes); }
  void do_free(void* ptr) noexcept override { arena_.release(ptr, false); }
  // Host memory outside the arena: the CPU may touch it (the emulated "pinned" memory).
  void* do_allocate_host(std::size_t bytes) override {
    void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
      throw DeviceError("emulated device: allocate_host " + std::to_string(bytes) + " bytes: " + std::strerror(errno));
    }
    return p;
  }
  void do_free_host(void* ptr, std::size_t bytes) noexcept override { ::munmap(ptr, bytes); }

  void* do_import(const IpcHandle& h) override {
    EmulatedIpc e{};
    std::memcpy(&e, h.bytes.data(), sizeof e);
    // /proc/<pid>/fd/<n> reopens the exporter's memfd (same user, a live exporter); the inode
    // check makes sure the descriptor number was not reused for another file meanwhile.
    const std::string path = "/proc/" + std::to_string(e.pid) + "/fd/" + std::to_string(e.fd);
    emulated::UniqueFd fd(::open(path.c_str(), O_RDWR | O_CLOEXEC));
    if (fd.get() < 0) {
      throw DeviceError("emulated device: import_ipc: open " + path + ": " + std::strerror(errno) +
                        " (has the exporting process exited?)");
    }
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) throw DeviceError("emulated device: import_ipc: fstat " + path);
    if (static_cast<std::uint64_t>(st.st_ino) != e.inode || static_cast<std::uint64_t>(st.st_dev) != e.dev ||
        static_cast<std::uint64_t>(st.st_size) < h.size) {
      throw DeviceError("emulated device: import_ipc: " + path + " is no longer the exported allocation");
    }
    return arena_.adopt(std::move(fd), h.size);
  }
  void do_close_import(void* base) noexcept override { arena_.release(base, true); }

 private:
  // A device-side argument must be device memory of this device (all `bytes` of it); a host-side
  // one must not be (a device pointer passed as host memory would be dereferenced).
  void check_side(const void* ptr, bool device_side, const char* what, std::size_t bytes) const {
    if (device_side) {
      (void)arena_.resolve(ptr, bytes, what);
    } else if (arena_.contains(ptr)) {
      throw UserError(std::string("emulated device: ") + what + " is device memory, host memory expected");
    }
  }

  Arena arena_;
  std::size_t reserve_;
};

}  // namespace

std::unique_ptr<Device> make_emulated_device(std::size_t reserve_bytes) {
  return std::make_unique<EmulatedDevice>(reserve_bytes);
}

}  // namespace tensorhub::device
