// First-fit allocator over one fixed region (the MPI_Win_allocate window): hands out 4 KiB
// aligned blocks, coalesces neighbours on free. Not thread-safe (the hub serialises calls).
#pragma once

#include <cstdint>
#include <map>

namespace tensorhub::transport {

class Pool {
 public:
  Pool(void* base, std::uint64_t bytes);
  // Throws UserError when no free block is large enough.
  void* allocate(std::uint64_t bytes);
  // Throws UserError for a pointer that allocate() did not return.
  void deallocate(void* p);
  bool contains(const void* p, std::uint64_t bytes) const;
  std::uint64_t offset_of(const void* p) const;
  std::uint64_t capacity() const { return bytes_; }
  std::uint64_t used() const { return used_; }

 private:
  std::uintptr_t base_;
  std::uint64_t bytes_;
  std::uint64_t used_ = 0;
  std::map<std::uint64_t, std::uint64_t> free_;  // offset -> size
  std::map<std::uint64_t, std::uint64_t> live_;  // offset -> size
};

}  // namespace tensorhub::transport
