// XXH3-64 (seed 0, default secret) written so that the same code runs on the host (C++) and in
// CUDA kernels (nvcc), and so that the long-input loop splits into independent pieces.
//
// XXH3-64 of n > 240 bytes keeps 8 accumulator lanes. Each 1 KiB block adds to every lane a sum
// that depends only on the block's bytes (16 stripes of 64 bytes: lane i gets the 32x32 product
// of its word ^ secret and its neighbour's (i^1) word), then scrambles the lanes (a short,
// nonlinear step). So
//     acc = INIT;  for each full block b: acc = scramble(acc + delta(b));  acc += delta(tail);
// where delta(b) is embarrassingly parallel (one thread per (block, lane) on a GPU) and only the
// scramble chain is sequential (a few operations per block and lane). The tail is the last,
// partial block's stripes plus the last 64 bytes of the input with the offset secret. The result
// is bit-for-bit XXH3_64bits() of libxxhash (tests/device/test_xxh3.cpp checks every length
// class and block boundary against it). Lengths <= 240 use XXH3's short paths, one thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define TH_HD __host__ __device__ __forceinline__
#else
#define TH_HD inline
#endif

namespace tensorhub::device::xxh3 {

constexpr std::size_t kStripe = 64;
constexpr std::size_t kStripesPerBlock = 16;  // (secret 192 - 64) / 8
constexpr std::size_t kBlock = kStripe * kStripesPerBlock;
constexpr std::size_t kSecretSize = 192;
constexpr std::size_t kMidsizeMax = 240;

constexpr std::uint64_t kP32_1 = 0x9E3779B1U;
constexpr std::uint64_t kP32_2 = 0x85EBCA77U;
constexpr std::uint64_t kP32_3 = 0xC2B2AE3DU;
constexpr std::uint64_t kP64_1 = 0x9E3779B185EBCA87ULL;
constexpr std::uint64_t kP64_2 = 0xC2B2AE3D27D4EB4FULL;
constexpr std::uint64_t kP64_3 = 0x165667B19E3779F9ULL;
constexpr std::uint64_t kP64_4 = 0x85EBCA77C2B2AE63ULL;
constexpr std::uint64_t kP64_5 = 0x27D4EB2F165667C5ULL;

// The default secret (XXH3_kSecret). XXH3 reads it at unaligned offsets (3, 7, 11, 17), so it
// stays bytes. Device code reads it from constant memory only where every thread reads the same
// word; per-lane keys are loaded into registers once (lane_keys).
#define TH_XXH3_SECRET_INIT                                                                                           \
  {                                                                                                                   \
    0xb8, 0xfe, 0x6c, 0x39, 0x23, 0xa4, 0x4b, 0xbe, 0x7c, 0x01, 0x81, 0x2c, 0xf7, 0x21, 0xad, 0x1c, 0xde, 0xd4, 0x6d, \
        0xe9, 0x83, 0x90, 0x97, 0xdb, 0x72, 0x40, 0xa4, 0xa4, 0xb7, 0xb3, 0x67, 0x1f, 0xcb, 0x79, 0xe6, 0x4e, 0xcc,   \
        0xc0, 0xe5, 0x78, 0x82, 0x5a, 0xd0, 0x7d, 0xcc, 0xff, 0x72, 0x21, 0xb8, 0x08, 0x46, 0x74, 0xf7, 0x43, 0x24,   \
        0x8e, 0xe0, 0x35, 0x90, 0xe6, 0x81, 0x3a, 0x26, 0x4c, 0x3c, 0x28, 0x52, 0xbb, 0x91, 0xc3, 0x00, 0xcb, 0x88,   \
        0xd0, 0x65, 0x8b, 0x1b, 0x53, 0x2e, 0xa3, 0x71, 0x64, 0x48, 0x97, 0xa2, 0x0d, 0xf9, 0x4e, 0x38, 0x19, 0xef,   \
        0x46, 0xa9, 0xde, 0xac, 0xd8, 0xa8, 0xfa, 0x76, 0x3f, 0xe3, 0x9c, 0x34, 0x3f, 0xf9, 0xdc, 0xbb, 0xc7, 0xc7,   \
        0x0b, 0x4f, 0x1d, 0x8a, 0x51, 0xe0, 0x4b, 0xcd, 0xb4, 0x59, 0x31, 0xc8, 0x9f, 0x7e, 0xc9, 0xd9, 0x78, 0x73,   \
        0x64, 0xea, 0xc5, 0xac, 0x83, 0x34, 0xd3, 0xeb, 0xc3, 0xc5, 0x81, 0xa0, 0xff, 0xfa, 0x13, 0x63, 0xeb, 0x17,   \
        0x0d, 0xdd, 0x51, 0xb7, 0xf0, 0xda, 0x49, 0xd3, 0x16, 0x55, 0x26, 0x29, 0xd4, 0x68, 0x9e, 0x2b, 0x16, 0xbe,   \
        0x58, 0x7d, 0x47, 0xa1, 0xfc, 0x8f, 0xf8, 0xb8, 0xd1, 0x7a, 0xd0, 0x31, 0xce, 0x45, 0xcb, 0x3a, 0x8f, 0x95,   \
        0x16, 0x04, 0x28, 0xaf, 0xd7, 0xfb, 0xca, 0xbb, 0x4b, 0x40, 0x7e                                              \
  }
#if defined(__CUDACC__)
static __constant__ std::uint8_t kSecretDevice[kSecretSize] = TH_XXH3_SECRET_INIT;
#endif
inline constexpr std::uint8_t kSecretHost[kSecretSize] = TH_XXH3_SECRET_INIT;
#undef TH_XXH3_SECRET_INIT

TH_HD const std::uint8_t* secret() {
#if defined(__CUDA_ARCH__)
  return kSecretDevice;
#else
  return kSecretHost;
#endif
}

// Little-endian loads byte by byte: no alignment assumption, the same on host and device (both
// little-endian; the compiler merges the loads where it can).
TH_HD std::uint64_t read64(const std::uint8_t* p) {
#if defined(__CUDA_ARCH__)
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
#else
  std::uint64_t v;
  std::memcpy(&v, p, sizeof v);  // little-endian hosts only (x86-64, aarch64)
  return v;
#endif
}
TH_HD std::uint32_t read32(const std::uint8_t* p) {
  return static_cast<std::uint32_t>(p[0]) | (static_cast<std::uint32_t>(p[1]) << 8) |
         (static_cast<std::uint32_t>(p[2]) << 16) | (static_cast<std::uint32_t>(p[3]) << 24);
}
TH_HD std::uint64_t rotl64(std::uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }
TH_HD std::uint64_t swap64(std::uint64_t x) {
  std::uint64_t r = 0;
  for (int i = 0; i < 8; ++i) r = (r << 8) | ((x >> (8 * i)) & 0xff);
  return r;
}
TH_HD std::uint64_t mul128_fold64(std::uint64_t a, std::uint64_t b) {
#if defined(__CUDA_ARCH__)
  return (a * b) ^ __umul64hi(a, b);
#else
  __extension__ using u128 = unsigned __int128;  // GCC/Clang on 64-bit hosts
  const u128 p = static_cast<u128>(a) * b;
  return static_cast<std::uint64_t>(p) ^ static_cast<std::uint64_t>(p >> 64);
#endif
}
TH_HD std::uint64_t xxh64_avalanche(std::uint64_t h) {
  h ^= h >> 33;
  h *= kP64_2;
  h ^= h >> 29;
  h *= kP64_3;
  return h ^ (h >> 32);
}
TH_HD std::uint64_t avalanche(std::uint64_t h) {
  h ^= h >> 37;
  h *= 0x165667919E3779F9ULL;
  return h ^ (h >> 32);
}
TH_HD std::uint64_t rrmxmx(std::uint64_t h, std::uint64_t len) {
  h ^= rotl64(h, 49) ^ rotl64(h, 24);
  h *= 0x9FB21C651E98DF25ULL;
  h ^= (h >> 35) + len;
  h *= 0x9FB21C651E98DF25ULL;
  return h ^ (h >> 28);
}
TH_HD std::uint64_t mix16(const std::uint8_t* in, const std::uint8_t* sec) {
  return mul128_fold64(read64(in) ^ read64(sec), read64(in + 8) ^ read64(sec + 8));
}

// XXH3_64bits for len <= 240 (seed 0).
TH_HD std::uint64_t hash_short(const std::uint8_t* in, std::size_t len) {
  const std::uint8_t* s = secret();
  if (len == 0) return xxh64_avalanche(read64(s + 56) ^ read64(s + 64));
  if (len <= 3) {
    const std::uint32_t combined = (static_cast<std::uint32_t>(in[0]) << 16) |
                                   (static_cast<std::uint32_t>(in[len >> 1]) << 24) |
                                   static_cast<std::uint32_t>(in[len - 1]) | (static_cast<std::uint32_t>(len) << 8);
    const std::uint64_t bitflip = static_cast<std::uint64_t>(read32(s) ^ read32(s + 4));
    return xxh64_avalanche(static_cast<std::uint64_t>(combined) ^ bitflip);
  }
  if (len <= 8) {
    const std::uint64_t bitflip = read64(s + 8) ^ read64(s + 16);
    const std::uint64_t input64 = read32(in + len - 4) + (static_cast<std::uint64_t>(read32(in)) << 32);
    return rrmxmx(input64 ^ bitflip, len);
  }
  if (len <= 16) {
    const std::uint64_t lo = read64(in) ^ (read64(s + 24) ^ read64(s + 32));
    const std::uint64_t hi = read64(in + len - 8) ^ (read64(s + 40) ^ read64(s + 48));
    return avalanche(len + swap64(lo) + hi + mul128_fold64(lo, hi));
  }
  std::uint64_t acc = len * kP64_1;
  if (len <= 128) {
    if (len > 32) {
      if (len > 64) {
        if (len > 96) {
          acc += mix16(in + 48, s + 96);
          acc += mix16(in + len - 64, s + 112);
        }
        acc += mix16(in + 32, s + 64);
        acc += mix16(in + len - 48, s + 80);
      }
      acc += mix16(in + 16, s + 32);
      acc += mix16(in + len - 32, s + 48);
    }
    acc += mix16(in, s);
    acc += mix16(in + len - 16, s + 16);
    return avalanche(acc);
  }
  for (int i = 0; i < 8; ++i) acc += mix16(in + 16 * i, s + 16 * i);
  acc = avalanche(acc);
  const int rounds = static_cast<int>(len / 16);
  for (int i = 8; i < rounds; ++i) acc += mix16(in + 16 * i, s + 16 * (i - 8) + 3);
  acc += mix16(in + len - 16, s + 136 - 17);
  return avalanche(acc);
}

TH_HD std::uint64_t init_lane(int lane) {
  const std::uint64_t init[8] = {kP32_3, kP64_1, kP64_2, kP64_3, kP64_4, kP32_2, kP64_5, kP32_1};
  return init[lane];
}

// One stripe's contribution to `lane` from its own word `own`, the neighbour lane's word
// `neighbour` (lane ^ 1) and the lane's key (the secret word at the stripe's offset).
TH_HD std::uint64_t term(std::uint64_t own, std::uint64_t neighbour, std::uint64_t key) {
  const std::uint64_t k = own ^ key;
  return (k & 0xFFFFFFFFULL) * (k >> 32) + neighbour;
}
TH_HD std::uint64_t stripe_term(const std::uint8_t* stripe, const std::uint8_t* key, int lane) {
  return term(read64(stripe + 8 * lane), read64(stripe + 8 * (lane ^ 1)), read64(key + 8 * lane));
}

// The keys of `lane` for the 16 stripes of a full block (the same for every block).
TH_HD void lane_keys(int lane, std::uint64_t keys[kStripesPerBlock]) {
  for (std::size_t st = 0; st < kStripesPerBlock; ++st) keys[st] = read64(secret() + st * 8 + 8 * lane);
}

// delta(b) for one lane of a full block (16 stripes).
TH_HD std::uint64_t block_delta(const std::uint8_t* block, const std::uint64_t keys[kStripesPerBlock], int lane) {
  std::uint64_t d = 0;
  for (std::size_t st = 0; st < kStripesPerBlock; ++st)
    d += term(read64(block + st * kStripe + 8 * lane), read64(block + st * kStripe + 8 * (lane ^ 1)), keys[st]);
  return d;
}

// The scramble after each full block; `key` = scramble_key(lane), loaded once.
TH_HD std::uint64_t scramble_key(int lane) { return read64(secret() + kSecretSize - kStripe + 8 * lane); }
TH_HD std::uint64_t scramble_with(std::uint64_t acc, std::uint64_t key) {
  acc ^= acc >> 47;
  acc ^= key;
  return acc * kP32_1;
}
TH_HD std::uint64_t scramble(std::uint64_t acc, int lane) { return scramble_with(acc, scramble_key(lane)); }

// Number of full (scrambled) blocks of a long input: XXH3 treats the last block as partial even
// when len is a multiple of 1 KiB.
TH_HD std::size_t full_blocks(std::size_t len) { return (len - 1) / kBlock; }

// delta(tail) for one lane: the partial block's stripes and the last 64 bytes of the input.
TH_HD std::uint64_t tail_delta(const std::uint8_t* in, std::size_t len, int lane) {
  const std::size_t start = full_blocks(len) * kBlock;
  const std::size_t stripes = ((len - 1) - start) / kStripe;
  std::uint64_t d = 0;
  for (std::size_t st = 0; st < stripes; ++st) d += stripe_term(in + start + st * kStripe, secret() + st * 8, lane);
  return d + stripe_term(in + len - kStripe, secret() + kSecretSize - kStripe - 7, lane);
}

// The final merge of the 8 lanes into the 64-bit hash.
TH_HD std::uint64_t merge(const std::uint64_t acc[8], std::size_t len) {
  const std::uint8_t* s = secret() + 11;
  std::uint64_t r = len * kP64_1;
  for (int i = 0; i < 4; ++i)
    r += mul128_fold64(acc[2 * i] ^ read64(s + 16 * i), acc[2 * i + 1] ^ read64(s + 16 * i + 8));
  return avalanche(r);
}

// The whole function, sequentially (host reference of the decomposition; the CUDA kernel runs
// the same pieces in parallel).
TH_HD std::uint64_t hash(const std::uint8_t* in, std::size_t len) {
  if (len <= kMidsizeMax) return hash_short(in, len);
  std::uint64_t acc[8];
  for (int l = 0; l < 8; ++l) acc[l] = init_lane(l);
  std::uint64_t keys[8][kStripesPerBlock];
  for (int l = 0; l < 8; ++l) lane_keys(l, keys[l]);
  const std::size_t blocks = full_blocks(len);
  for (std::size_t b = 0; b < blocks; ++b)
    for (int l = 0; l < 8; ++l) acc[l] = scramble(acc[l] + block_delta(in + b * kBlock, keys[l], l), l);
  for (int l = 0; l < 8; ++l) acc[l] += tail_delta(in, len, l);
  return merge(acc, len);
}

}  // namespace tensorhub::device::xxh3
