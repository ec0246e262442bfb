#include "generation_table.hpp"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <random>
#include <string>

#include "tensorhub/core/error.hpp"

namespace tensorhub::transport::cma {

static_assert(sizeof(std::atomic<std::uint64_t>) == 8 && std::atomic<std::uint64_t>::is_always_lock_free);

GenerationTable::GenerationTable(std::uint32_t slots) : slots_(slots) {
  require(slots > 0, "cma: generation table without slots");
  void* p = mmap(nullptr, std::size_t{slots} * 8, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw TransportError(std::string("cma: mmap of the generation table: ") + std::strerror(errno));
  words_ = static_cast<std::atomic<std::uint64_t>*>(p);  // zero-filled: every slot withdrawn
  std::random_device rd;
  next_generation_ = ((std::uint64_t{rd()} << 32) | rd()) >> 8 | 1;  // far from wrapping, never 0
}

GenerationTable::~GenerationTable() { munmap(words_, std::size_t{slots_} * 8); }

GenerationTable::Entry GenerationTable::acquire() {
  const std::lock_guard lock(mutex_);
  Entry e;
  if (!free_.empty()) {
    e.slot = free_.back();
    free_.pop_back();
  } else if (next_unused_ < slots_) {
    e.slot = next_unused_++;
  } else {
    throw TransportError("cma: more than " + std::to_string(slots_) + " exposures at once");
  }
  e.generation = next_generation_++;
  words_[e.slot].store(e.generation, std::memory_order_seq_cst);
  return e;
}

void GenerationTable::release(std::uint32_t slot) {
  words_[slot].store(0, std::memory_order_seq_cst);
  const std::lock_guard lock(mutex_);
  free_.push_back(slot);
}

std::uint64_t GenerationTable::address() const {
  return static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(words_));
}

}  // namespace tensorhub::transport::cma
