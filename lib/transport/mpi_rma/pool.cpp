#include "pool.hpp"

#include <algorithm>
#include <iterator>
#include <string>

#include "tensorhub/core/error.hpp"
#include "tensorhub/core/units.hpp"

namespace tensorhub::transport {
namespace {
constexpr std::uint64_t kAlign = 4096;
}

Pool::Pool(void* base, std::uint64_t bytes)
    : base_(reinterpret_cast<std::uintptr_t>(base)), bytes_(bytes), touched_((bytes + kAlign - 1) / kAlign, false) {
  if (bytes > 0) free_.emplace(0, bytes);
}

void Pool::touch(std::uint64_t offset, std::uint64_t bytes) {
  // Page p of the table covers [p * kAlign, (p + 1) * kAlign) of the region; blocks start at
  // multiples of kAlign and never pass the region's end.
  const std::uint64_t end = std::min(offset + bytes, bytes_);
  for (std::uint64_t off = offset; off < end; off += kAlign) {
    const auto page = static_cast<std::size_t>(off / kAlign);
    if (touched_[page]) continue;
    *reinterpret_cast<volatile unsigned char*>(base_ + off) = 0;
    touched_[page] = true;
    ++touched_count_;
  }
}

void* Pool::allocate(std::uint64_t bytes) {
  const std::uint64_t need = (std::max<std::uint64_t>(bytes, 1) + kAlign - 1) / kAlign * kAlign;
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    if (it->second < need) continue;
    const std::uint64_t off = it->first;
    const std::uint64_t rest = it->second - need;
    free_.erase(it);
    if (rest > 0) free_.emplace(off + need, rest);
    live_.emplace(off, need);
    used_ += need;
    touch(off, need);
    return reinterpret_cast<void*>(base_ + off);
  }
  throw UserError("hub memory pool exhausted: " + format_bytes(need) + " requested, " + format_bytes(bytes_ - used_) +
                  " free of " + format_bytes(bytes_) + " (raise HubOptions::pool_bytes / TENSORHUB_POOL_BYTES)");
}

void Pool::deallocate(void* p) {
  const auto off = reinterpret_cast<std::uintptr_t>(p) - base_;
  const auto it = live_.find(off);
  if (reinterpret_cast<std::uintptr_t>(p) < base_ || it == live_.end()) {
    throw UserError("deallocate of memory that Hub::allocate did not return");
  }
  std::uint64_t start = off;
  std::uint64_t size = it->second;
  used_ -= size;
  live_.erase(it);
  auto next = free_.lower_bound(start);
  if (next != free_.end() && next->first == start + size) {
    size += next->second;
    next = free_.erase(next);
  }
  if (next != free_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == start) {
      start = prev->first;
      size += prev->second;
      free_.erase(prev);
    }
  }
  free_.emplace(start, size);
}

bool Pool::contains(const void* p, std::uint64_t bytes) const {
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  return a >= base_ && a + bytes <= base_ + bytes_;
}

std::uint64_t Pool::offset_of(const void* p) const { return reinterpret_cast<std::uintptr_t>(p) - base_; }

}  // namespace tensorhub::transport
