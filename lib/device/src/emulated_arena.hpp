// The emulated device's memory: a reserved PROT_NONE address range whose pieces name device
// allocations, each backed by a memfd mapped at another (private) address. Only resolve()
// turns a device address into its backing bytes; nothing maps the device range readable, so a
// host dereference of a device pointer faults. Thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>

#include "tensorhub/device/device.hpp"

namespace tensorhub::device::emulated {

// An owned file descriptor (closed on destruction).
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  UniqueFd& operator=(UniqueFd&& o) noexcept;
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd();
  int get() const { return fd_; }

 private:
  int fd_ = -1;
};

struct Region {
  std::size_t offset = 0;  // in the reserved range
  std::size_t size = 0;    // as allocated / exported
  std::size_t span = 0;    // reserved device addresses (size rounded up to the granularity)
  UniqueFd fd;             // the memfd (owned or imported)
  std::uint8_t* backing = nullptr;
  bool imported = false;
};

class Arena {
 public:
  static constexpr std::size_t kGranularity = std::size_t{64} << 10;

  explicit Arena(std::size_t reserve_bytes);
  ~Arena();
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;

  void* allocate(std::size_t bytes);                 // a new memfd
  void* adopt(UniqueFd fd, std::size_t bytes);       // an imported memfd
  bool release(void* base, bool imported) noexcept;  // false if `base` is no such region
  bool contains(const void* ptr) const noexcept;     // inside the reserved range
  PointerInfo query(const void* ptr) const;
  // The backing bytes of [ptr, ptr + bytes), which must lie in one region (UserError otherwise;
  // `what` names the caller's argument).
  std::uint8_t* resolve(const void* ptr, std::size_t bytes, const char* what) const;
  // The memfd and size of the region holding `ptr` (for export).
  int fd_of(const void* ptr, std::size_t* size, std::size_t* offset) const;

 private:
  void* place(Region region);
  std::size_t take_range(std::size_t span);
  void give_range(std::size_t offset, std::size_t span) noexcept;
  const Region* find(const void* ptr) const;  // mu_ held

  mutable std::mutex mu_;
  std::uint8_t* reserve_ = nullptr;
  std::size_t reserve_bytes_ = 0;
  std::map<std::size_t, std::size_t> free_;  // offset -> length
  std::map<std::size_t, Region> regions_;    // offset -> region
};

}  // namespace tensorhub::device::emulated
