// The cuda backend's kernels (cuda_kernels.cu, compiled by nvcc), called from cuda_device.cpp
// and the device benchmark. Each returns the launch's cudaError_t (cudaGetLastError).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace tensorhub::device::cuda {

// out[c] = XXH3_64bits(data + c * chunk, min(chunk, bytes - c * chunk)) for every chunk c;
// `out` is device memory of ceil(bytes / chunk) words. One thread block per chunk: its threads
// sum the 1 KiB blocks' lane deltas of a 128 KiB segment in parallel, eight threads run the
// scramble chain over them (xxh3_core.hpp).
cudaError_t launch_xxh3_chunks(const void* data, std::size_t bytes, std::size_t chunk, std::uint64_t* out,
                               cudaStream_t stream);

// dst = src on the device with a plain load/store kernel (the benchmark's bandwidth baseline).
cudaError_t launch_copy(void* dst, const void* src, std::size_t bytes, cudaStream_t stream);

}  // namespace tensorhub::device::cuda
