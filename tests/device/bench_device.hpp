// bench_device: the GPU check's device benchmark (see bench_device.cpp). Measurements on the
// cuda backend; each returns the GB/s (10^9 bytes/s) of every repetition.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tensorhub/device/device.hpp"

namespace tensorhub::bench {

struct Options {
  std::size_t bytes = std::size_t{4} << 30;
  std::size_t chunk = std::size_t{4} << 20;
  std::size_t slot = std::size_t{64} << 20;  // staged ring: two pinned slots of this size
  int reps = 5;
};

std::vector<double> d2d_memcpy(device::Device& dev, const void* src, void* dst, const Options& o);
std::vector<double> copy_kernel(device::Device& dev, const void* src, void* dst, const Options& o);
std::vector<double> xxh3(device::Device& dev, const void* src, const Options& o);
// cudaMemcpy device->pinned host of the whole buffer, then host->device (the staged baseline).
std::vector<double> d2h_h2d_memcpy(device::Device& dev, const void* src, void* dst, const Options& o);
// The staged pull pattern: device->pinned slot on one stream, slot->device on another, two slots
// double-buffered with events (bounded host memory: 2 x slot).
std::vector<double> staged_ring(device::Device& dev, const void* src, void* dst, const Options& o);
// The reader: import `handle`, copy the whole range device-to-device `reps` times into its own
// buffer; `verified` when the device XXH3 digest of the copy equals `digest`.
std::vector<double> ipc_pull(const device::IpcHandle& handle, std::uint64_t digest, const Options& o, bool* verified);

// XXH3 of the per-chunk device sums: one number naming the buffer's content.
std::uint64_t digest(device::Device& dev, const void* data, const Options& o);

}  // namespace tensorhub::bench
