// The holder's exposure generations: a table of 64-bit words in the holder's own memory that
// readers read with process_vm_readv next to the data. An Exposure takes a slot and writes a
// fresh generation into it; withdrawing it writes 0. A descriptor names (slot, generation), so a
// reader can tell, after each chunk, whether the exposure it read was still in place
// (transport.hpp's "no read after unpublish": see cma_transport.hpp). Generations are never
// reused within one table (a counter from a random start), so a recycled slot never validates
// an old descriptor. The table is one anonymous mapping that lives as long as the transport.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <vector>

namespace tensorhub::transport::cma {

class GenerationTable {
 public:
  explicit GenerationTable(std::uint32_t slots);
  ~GenerationTable();
  GenerationTable(const GenerationTable&) = delete;
  GenerationTable& operator=(const GenerationTable&) = delete;

  struct Entry {
    std::uint32_t slot = 0;
    std::uint64_t generation = 0;
  };
  // Throws TransportError when every slot is taken.
  Entry acquire();
  // Withdraws: readers see the slot change before this returns (seq_cst store).
  void release(std::uint32_t slot);

  std::uint64_t address() const;
  std::uint32_t slots() const { return slots_; }

 private:
  std::uint32_t slots_;
  std::atomic<std::uint64_t>* words_ = nullptr;  // mmap'ed, slots_ words
  std::mutex mutex_;
  std::vector<std::uint32_t> free_;
  std::uint32_t next_unused_ = 0;
  std::uint64_t next_generation_;
};

}  // namespace tensorhub::transport::cma
