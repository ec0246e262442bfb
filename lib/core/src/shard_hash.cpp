#include "tensorhub/core/shard_hash.hpp"

#include <sched.h>

#include <algorithm>
#include <thread>
#include <vector>

#include "tensorhub/core/checksum.hpp"
#include "tensorhub/core/error.hpp"

namespace tensorhub {
namespace {

struct ChunkRef {
  const unsigned char* data;
  std::uint64_t length;
  std::uint64_t* sum;
};

constexpr std::size_t kMinChunksPerThread = 4;

}  // namespace

unsigned usable_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return static_cast<unsigned>(CPU_COUNT(&set));
  return std::thread::hardware_concurrency();
}

unsigned default_hash_threads() { return std::clamp(usable_cpus(), 1u, 4u); }

bool hash_shard(ShardManifest& shard, std::span<const Tensor> tensors, std::uint64_t chunk_bytes, unsigned threads,
                const std::atomic<bool>* cancel) {
  require(shard.checksums.size() == tensors.size(), "hash_shard: checksum rows do not match the tensors");
  require(chunk_bytes > 0, "hash_shard: chunk_bytes is zero");
  std::vector<ChunkRef> chunks;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const auto* base = static_cast<const unsigned char*>(tensors[i].data);
    const std::uint64_t bytes = tensors[i].spec.bytes();
    auto& row = shard.checksums[i];
    require(row.size() == chunk_count(bytes, chunk_bytes), "hash_shard: checksum row of the wrong size");
    for (std::size_t c = 0; c < row.size(); ++c) {
      const std::uint64_t off = c * chunk_bytes;
      chunks.push_back(ChunkRef{base + off, std::min(chunk_bytes, bytes - off), &row[c]});
    }
  }
  const ChecksumAlgorithm algorithm = shard.checksum_algorithm;
  checksum_algorithm_name(algorithm);  // a known one, before any thread starts
  std::atomic<bool> stopped{false};
  auto run = [&](std::size_t begin, std::size_t end) {
    for (std::size_t c = begin; c < end; ++c) {
      if (cancel != nullptr && cancel->load(std::memory_order_relaxed)) {
        stopped = true;
        return;
      }
      *chunks[c].sum = checksum64(algorithm, chunks[c].data, chunks[c].length);
    }
  };
  const std::size_t n = chunks.size();
  const std::size_t runs = std::clamp<std::size_t>(n / kMinChunksPerThread, 1, std::max(1u, threads));
  std::vector<std::jthread> workers;
  workers.reserve(runs - 1);
  for (std::size_t r = 1; r < runs; ++r) workers.emplace_back(run, n * r / runs, n * (r + 1) / runs);
  run(0, n / runs);
  workers.clear();  // joins
  return !stopped.load();
}

}  // namespace tensorhub
