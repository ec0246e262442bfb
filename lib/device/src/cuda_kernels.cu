#include <cstddef>
#include <cstdint>

#include "cuda_kernels.hpp"
#include "xxh3_core.hpp"

namespace tensorhub::device::cuda {
namespace {

namespace x = tensorhub::device::xxh3;

constexpr int kThreads = 256;
constexpr int kRows = kThreads / 8;  // blocks summed at once (8 lanes each)
constexpr int kSegmentBlocks = 128;  // 1 KiB blocks per segment: 128 KiB of input, 8 KiB of deltas

template <bool kAligned>
__device__ __forceinline__ std::uint64_t load64(const std::uint8_t* p) {
  if constexpr (kAligned) {
    return __ldg(reinterpret_cast<const unsigned long long*>(p));
  } else {
    return x::read64(p);
  }
}

template <bool kAligned>
__global__ void __launch_bounds__(kThreads)
    xxh3_chunks(const std::uint8_t* data, std::size_t bytes, std::size_t chunk, std::uint64_t* out) {
  __shared__ std::uint64_t delta[kSegmentBlocks][8];
  __shared__ std::uint64_t acc[8];
  const std::size_t c = blockIdx.x;
  const std::size_t start = c * chunk;
  const std::size_t len = chunk < bytes - start ? chunk : bytes - start;
  const std::uint8_t* in = data + start;
  if (len <= x::kMidsizeMax) {
    if (threadIdx.x == 0) out[c] = x::hash_short(in, len);
    return;
  }
  const int lane = static_cast<int>(threadIdx.x & 7);
  const int row = static_cast<int>(threadIdx.x >> 3);
  std::uint64_t keys[x::kStripesPerBlock];
  x::lane_keys(lane, keys);
  const std::uint64_t skey = x::scramble_key(lane);
  std::uint64_t a = x::init_lane(lane);  // used by threads 0..7 only
  const std::size_t blocks = x::full_blocks(len);
  for (std::size_t seg = 0; seg < blocks; seg += kSegmentBlocks) {
    const int n = static_cast<int>(blocks - seg < kSegmentBlocks ? blocks - seg : kSegmentBlocks);
    for (int b = row; b < n; b += kRows) {
      const std::uint8_t* blk = in + (seg + b) * x::kBlock;
      std::uint64_t d = 0;
#pragma unroll
      for (int st = 0; st < static_cast<int>(x::kStripesPerBlock); ++st) {
        const std::uint8_t* stripe = blk + st * x::kStripe;
        d += x::term(load64<kAligned>(stripe + 8 * lane), load64<kAligned>(stripe + 8 * (lane ^ 1)), keys[st]);
      }
      delta[b][lane] = d;
    }
    __syncthreads();
    if (threadIdx.x < 8) {
      for (int b = 0; b < n; ++b) a = x::scramble_with(a + delta[b][lane], skey);
    }
    __syncthreads();
  }
  if (threadIdx.x < 8) acc[lane] = a + x::tail_delta(in, len, lane);
  __syncthreads();
  if (threadIdx.x == 0) out[c] = x::merge(acc, len);
}

__global__ void copy_kernel(uint4* dst, const uint4* src, std::size_t n16, std::uint8_t* dst_tail,
                            const std::uint8_t* src_tail, std::size_t tail) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n16; i += stride) {
    dst[i] = src[i];
  }
  if (blockIdx.x == 0 && threadIdx.x < tail) dst_tail[threadIdx.x] = src_tail[threadIdx.x];
}

}  // namespace

cudaError_t launch_xxh3_chunks(const void* data, std::size_t bytes, std::size_t chunk, std::uint64_t* out,
                               cudaStream_t stream) {
  if (bytes == 0 || chunk == 0) return cudaSuccess;
  const std::size_t chunks = (bytes + chunk - 1) / chunk;
  if (chunks > 0x7fffffffULL) return cudaErrorInvalidValue;
  const auto* p = static_cast<const std::uint8_t*>(data);
  const bool aligned = reinterpret_cast<std::uintptr_t>(p) % 8 == 0 && chunk % 8 == 0;
  if (aligned) {
    xxh3_chunks<true><<<static_cast<unsigned>(chunks), kThreads, 0, stream>>>(p, bytes, chunk, out);
  } else {
    xxh3_chunks<false><<<static_cast<unsigned>(chunks), kThreads, 0, stream>>>(p, bytes, chunk, out);
  }
  return cudaGetLastError();
}

cudaError_t launch_copy(void* dst, const void* src, std::size_t bytes, cudaStream_t stream) {
  if (bytes == 0) return cudaSuccess;
  if (reinterpret_cast<std::uintptr_t>(dst) % 16 != 0 || reinterpret_cast<std::uintptr_t>(src) % 16 != 0) {
    return cudaErrorInvalidValue;
  }
  const std::size_t n16 = bytes / 16;
  const std::size_t tail = bytes % 16;
  int device = 0;
  int sms = 0;
  cudaError_t e = cudaGetDevice(&device);
  if (e == cudaSuccess) e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  if (e != cudaSuccess) return e;
  auto* d = static_cast<std::uint8_t*>(dst);
  const auto* s = static_cast<const std::uint8_t*>(src);
  copy_kernel<<<static_cast<unsigned>(sms * 8), 256, 0, stream>>>(
      reinterpret_cast<uint4*>(d), reinterpret_cast<const uint4*>(s), n16, d + n16 * 16, s + n16 * 16, tail);
  return cudaGetLastError();
}

}  // namespace tensorhub::device::cuda
