// A copy that writes its destination with non-temporal (streaming) stores where the CPU has
// them (x86-64: SSE2 movntdq), plain memcpy elsewhere.
//
// Why: a scattered read lands in short pieces spread over the destination (the 1 KiB rows of a
// row-parallel box, 4 KiB apart). Ordinary stores of such pieces first read each destination
// cache line from memory (read-for-ownership), so every byte delivered costs a memory read as
// well as a write; the kernel's copy does the same for short iovecs. Streaming stores write whole
// lines without reading them: the cma reader copies a scattered read into a cache-sized bounce
// buffer with one contiguous process_vm_readv, hashes it there, and streams its pieces out.
// Measured (bench reshard, dim 1, 1 KiB rows): 1.15-1.35x a plain pull against 1.9-2.2x for the
// kernel's scatter into iovecs (README "Resharding").
#pragma once

#include <cstddef>

namespace tensorhub::transport::cma {

// Copies n bytes (any alignment, any length: the unaligned head and the tail use ordinary
// stores). The streaming stores are weakly ordered: call stream_fence() before another thread
// may read the destination.
void stream_copy(void* to, const void* from, std::size_t n);

// Orders every earlier stream_copy store before later stores (sfence; nothing without them).
void stream_fence();

}  // namespace tensorhub::transport::cma
