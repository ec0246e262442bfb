#include "emulated_arena.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "tensorhub/core/error.hpp"

namespace tensorhub::device::emulated {
namespace {

[[noreturn]] void sys_fail(const std::string& what) {
  throw DeviceError("emulated device: " + what + ": " + std::strerror(errno));
}

std::size_t round_up(std::size_t v, std::size_t g) { return (v + g - 1) / g * g; }

}  // namespace

UniqueFd& UniqueFd::operator=(UniqueFd&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = o.fd_;
    o.fd_ = -1;
  }
  return *this;
}
UniqueFd::~UniqueFd() {
  if (fd_ >= 0) ::close(fd_);
}

Arena::Arena(std::size_t reserve_bytes) : reserve_bytes_(round_up(reserve_bytes, kGranularity)) {
  if (reserve_bytes_ == 0) throw UserError("emulated device: 0 bytes of address space");
  void* p = ::mmap(nullptr, reserve_bytes_, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) sys_fail("reserving " + std::to_string(reserve_bytes_) + " bytes of address space");
  reserve_ = static_cast<std::uint8_t*>(p);
  free_.emplace(0, reserve_bytes_);
}

Arena::~Arena() {
  for (auto& [offset, r] : regions_) ::munmap(r.backing, r.span);
  ::munmap(reserve_, reserve_bytes_);
}

std::size_t Arena::take_range(std::size_t span) {
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    if (it->second < span) continue;
    const std::size_t offset = it->first;
    const std::size_t rest = it->second - span;
    free_.erase(it);
    if (rest > 0) free_.emplace(offset + span, rest);
    return offset;
  }
  throw DeviceError("emulated device: out of device address space (" + std::to_string(reserve_bytes_) +
                    " bytes reserved; make_emulated_device(reserve_bytes))");
}

void Arena::give_range(std::size_t offset, std::size_t span) noexcept {
  auto [it, inserted] = free_.emplace(offset, span);
  (void)inserted;
  auto next = std::next(it);
  if (next != free_.end() && it->first + it->second == next->first) {
    it->second += next->second;
    free_.erase(next);
  }
  if (it != free_.begin()) {
    auto prev = std::prev(it);
    if (prev->first + prev->second == it->first) {
      prev->second += it->second;
      free_.erase(it);
    }
  }
}

void* Arena::place(Region region) {
  void* backing = ::mmap(nullptr, region.span, PROT_READ | PROT_WRITE, MAP_SHARED, region.fd.get(), 0);
  if (backing == MAP_FAILED) sys_fail("mapping " + std::to_string(region.span) + " bytes of device memory");
  region.backing = static_cast<std::uint8_t*>(backing);
  std::lock_guard lock(mu_);
  try {
    region.offset = take_range(region.span);
  } catch (...) {
    ::munmap(backing, region.span);
    throw;
  }
  const std::size_t offset = region.offset;
  regions_.emplace(offset, std::move(region));
  return reserve_ + offset;
}

void* Arena::allocate(std::size_t bytes) {
  Region r;
  r.size = bytes;
  r.span = round_up(bytes, kGranularity);
  r.fd = UniqueFd(::memfd_create("tensorhub-emulated-device", MFD_CLOEXEC));
  if (r.fd.get() < 0) sys_fail("memfd_create");
  if (::ftruncate(r.fd.get(), static_cast<off_t>(r.span)) != 0)
    sys_fail("ftruncate of the memfd to " + std::to_string(r.span));
  return place(std::move(r));
}

void* Arena::adopt(UniqueFd fd, std::size_t bytes) {
  Region r;
  r.size = bytes;
  r.span = round_up(bytes, kGranularity);
  r.fd = std::move(fd);
  r.imported = true;
  return place(std::move(r));
}

bool Arena::release(void* base, bool imported) noexcept {
  std::lock_guard lock(mu_);
  if (!contains(base)) return false;
  const auto it = regions_.find(static_cast<std::size_t>(static_cast<std::uint8_t*>(base) - reserve_));
  if (it == regions_.end() || it->second.imported != imported) return false;
  ::munmap(it->second.backing, it->second.span);
  give_range(it->first, it->second.span);
  regions_.erase(it);
  return true;
}

bool Arena::contains(const void* ptr) const noexcept {
  const auto* p = static_cast<const std::uint8_t*>(ptr);
  return p >= reserve_ && p < reserve_ + reserve_bytes_;
}

const Region* Arena::find(const void* ptr) const {
  if (!contains(ptr)) return nullptr;
  const std::size_t off = static_cast<std::size_t>(static_cast<const std::uint8_t*>(ptr) - reserve_);
  auto it = regions_.upper_bound(off);
  if (it == regions_.begin()) return nullptr;
  --it;
  if (off >= it->first + it->second.size) return nullptr;
  return &it->second;
}

PointerInfo Arena::query(const void* ptr) const {
  std::lock_guard lock(mu_);
  const Region* r = find(ptr);
  PointerInfo info;
  if (r == nullptr) return info;
  info.is_device = true;
  info.ordinal = 0;
  info.base = reserve_ + r->offset;
  info.size = r->size;
  return info;
}

std::uint8_t* Arena::resolve(const void* ptr, std::size_t bytes, const char* what) const {
  std::lock_guard lock(mu_);
  const Region* r = find(ptr);
  if (r == nullptr) {
    throw UserError(std::string("emulated device: ") + what + " is not device memory of this device");
  }
  const std::size_t off = static_cast<std::size_t>(static_cast<const std::uint8_t*>(ptr) - reserve_) - r->offset;
  if (bytes > r->size - off) {
    throw UserError(std::string("emulated device: ") + what + ": " + std::to_string(bytes) + " bytes at offset " +
                    std::to_string(off) + " run past its allocation of " + std::to_string(r->size) + " bytes");
  }
  return r->backing + off;
}

int Arena::fd_of(const void* ptr, std::size_t* size, std::size_t* offset) const {
  std::lock_guard lock(mu_);
  const Region* r = find(ptr);
  if (r == nullptr)
    throw UserError("emulated device: export_ipc of a pointer that is not device memory of this device");
  *size = r->size;
  *offset = static_cast<std::size_t>(static_cast<const std::uint8_t*>(ptr) - reserve_) - r->offset;
  return r->fd.get();
}

}  // namespace tensorhub::device::emulated
