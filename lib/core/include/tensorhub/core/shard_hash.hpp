// The per-chunk checksums of a shard's bytes, on several threads: the pass that publishing
// spends its time in (1 GiB is ~60 ms of XXH3 on one core), kept off the caller's thread by the
// hub's publish jobs (lib/hub publish_job.hpp).
#pragma once

#include <atomic>
#include <cstdint>
#include <span>

#include "tensorhub/core/manifest.hpp"
#include "tensorhub/core/tensor.hpp"

namespace tensorhub {

// CPUs this process may run on (its affinity mask: 1 for an MPI rank bound to one core).
unsigned usable_cpus();
// Threads a publish hashes one shard on: min(4, usable_cpus()), at least 1.
unsigned default_hash_threads();

// Fills shard.checksums (as describe_shard_layout sized them, for `tensors` in the same order)
// under shard.checksum_algorithm. The shard's chunks are cut into at most `threads` contiguous
// runs of at least 4 chunks, each hashed on its own thread (the calling thread takes the first
// run, so `threads` 1 or a small shard spawns none). Returns false, with some sums unfilled,
// when `cancel` became true (checked before every chunk). `threads` 0 counts as 1.
bool hash_shard(ShardManifest& shard, std::span<const Tensor> tensors, std::uint64_t chunk_bytes, unsigned threads,
                const std::atomic<bool>* cancel = nullptr);

}  // namespace tensorhub
