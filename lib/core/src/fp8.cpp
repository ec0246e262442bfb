#include "tensorhub/core/fp8.hpp"

#include <algorithm>
#include <bit>
#include <cmath>

#include "tensorhub/core/error.hpp"

namespace tensorhub {
namespace {

struct Layout {
  int mantissa;       // bits
  int bias;           // exponent bias
  std::uint8_t max;   // bits of the largest finite magnitude
  std::uint8_t over;  // bits of what rounds above it, infinities too (448 for e4m3fn, infinity for e5m2)
  std::uint8_t nan;
};

constexpr Layout layout(Fp8Format f) {
  return f == Fp8Format::kE4M3FN ? Layout{3, 7, 0x7E, 0x7E, 0x7F} : Layout{2, 15, 0x7B, 0x7C, 0x7F};
}

float bf16_to_float(std::uint16_t b) { return std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16); }

// fp8_from_float without branches, for the quantizer's inner loop (the compiler vectorizes it):
// normal results round the float32 mantissa to nearest even by integer addition and rebias the
// exponent; subnormal ones let the FPU round, by adding a power of two whose ulp is the FP8
// subnormal step (2^14 for e4m3fn's 2^-9, 2^7 for e5m2's 2^-16) and taking the low bits.
// test_core's Fp8.FastPathEqualsTheCast checks it against fp8_from_float on every bf16 input.
// All-ones where `c` holds, else zero: selects without branches.
inline std::uint32_t mask(bool c) { return 0u - static_cast<std::uint32_t>(c); }
inline std::uint32_t pick(std::uint32_t m, std::uint32_t yes, std::uint32_t no) { return (yes & m) | (no & ~m); }

inline std::uint8_t e4m3fn_fast(float v) {
  const auto bits = std::bit_cast<std::uint32_t>(v);
  const std::uint32_t sign = (bits >> 24) & 0x80;
  const std::uint32_t m = bits & 0x7FFFFFFF;
  const std::uint32_t a = pick(mask(m > 0x43E00000), 0x43E00000, m);  // saturate at 448 (NaN below)
  const std::uint32_t normal = ((a + 0x7FFFF + ((a >> 20) & 1)) >> 20) - (120u << 3);
  const std::uint32_t sub = std::bit_cast<std::uint32_t>(std::bit_cast<float>(a) + 16384.0f) - 0x46800000;
  const std::uint32_t code = pick(mask(a < 0x3C800000), sub, normal);
  return static_cast<std::uint8_t>(pick(mask(m > 0x7F800000), 0x7F, code) | sign);
}

inline std::uint8_t e5m2_fast(float v) {
  const auto bits = std::bit_cast<std::uint32_t>(v);
  const std::uint32_t sign = (bits >> 24) & 0x80;
  const std::uint32_t m = bits & 0x7FFFFFFF;
  const std::uint32_t a = pick(mask(m > 0x7F800000), 0x7F800000, m);  // NaN as infinity (fixed below)
  const std::uint32_t rounded = ((a + 0xFFFFF + ((a >> 21) & 1)) >> 21) - (112u << 2);
  const std::uint32_t normal = pick(mask(rounded > 0x7C), 0x7C, rounded);  // above 57344: infinity
  const std::uint32_t sub = std::bit_cast<std::uint32_t>(std::bit_cast<float>(a) + 128.0f) - 0x43000000;
  const std::uint32_t code = pick(mask(a < 0x38800000), sub, normal);
  return static_cast<std::uint8_t>(pick(mask(m > 0x7F800000), 0x7F, code) | sign);
}

// The inner loops: vectorized (fp8.cpp is compiled with -O3, lib/core/CMakeLists.txt) and, on
// x86-64 with GCC, cloned for AVX2 and picked at load time (target_clones). Measured on the
// 2-core VM (4096 x 4096, 128 x 128 blocks): 0.16 GB/s of bf16 before, 0.7-0.9 (SSE2) and 1.2
// (AVX2) after. Not under the sanitizers: the clones' load-time resolver runs before their
// runtime starts (TSan crashes in it).
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_THREAD__) && \
    !defined(__SANITIZE_ADDRESS__)
#define TENSORHUB_FP8_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define TENSORHUB_FP8_CLONES
#endif

TENSORHUB_FP8_CLONES void quantize_row_e4m3fn(const std::uint16_t* x, std::size_t n, float s, std::uint8_t* q) {
  for (std::size_t i = 0; i < n; ++i) q[i] = e4m3fn_fast(bf16_to_float(x[i]) / s);
}

TENSORHUB_FP8_CLONES void quantize_row_e5m2(const std::uint16_t* x, std::size_t n, float s, std::uint8_t* q) {
  for (std::size_t i = 0; i < n; ++i) q[i] = e5m2_fast(bf16_to_float(x[i]) / s);
}

UserError non_finite(std::span<const std::uint16_t> x, const Fp8Blocks& b, std::int64_t br, std::int64_t bc) {
  for (std::int64_t r = br * b.block_rows; r < std::min(b.rows, (br + 1) * b.block_rows); ++r) {
    for (std::int64_t c = bc * b.block_cols; c < std::min(b.cols, (bc + 1) * b.block_cols); ++c) {
      if ((x[static_cast<std::size_t>(r * b.cols + c)] & 0x7FFF) >= 0x7F80) {
        return UserError("fp8: element (" + std::to_string(r) + ", " + std::to_string(c) + ") of scale block (" +
                         std::to_string(br) + ", " + std::to_string(bc) +
                         ") is NaN or infinite: the block has no scale");
      }
    }
  }
  return UserError("fp8: scale block (" + std::to_string(br) + ", " + std::to_string(bc) + ") is not finite");
}

}  // namespace

std::uint8_t fp8_fast_for_test(float x, Fp8Format f) { return f == Fp8Format::kE4M3FN ? e4m3fn_fast(x) : e5m2_fast(x); }

std::string fp8_format_name(Fp8Format f) { return f == Fp8Format::kE4M3FN ? "e4m3fn" : "e5m2"; }

float fp8_max(Fp8Format f) { return f == Fp8Format::kE4M3FN ? 448.0f : 57344.0f; }

std::uint8_t fp8_from_float(float x, Fp8Format f) {
  const Layout l = layout(f);
  const auto bits = std::bit_cast<std::uint32_t>(x);
  const auto sign = static_cast<std::uint8_t>((bits >> 24) & 0x80);
  const std::uint32_t magnitude = bits & 0x7FFFFFFF;
  if (magnitude > 0x7F800000) return sign | l.nan;
  if (magnitude == 0x7F800000) return sign | l.over;
  const int exponent = static_cast<int>(magnitude >> 23);
  if (exponent == 0) return sign;  // float32 subnormals are far below the smallest FP8 value
  // x = significand * 2^(e - 23) with a 24-bit significand; FP8 keeps `mantissa` bits below the
  // leading one for normal results, fewer for subnormal ones (exponent below 1 - bias).
  const std::uint32_t significand = (magnitude & 0x7FFFFF) | 0x800000;
  const int e = exponent - 127;
  const int min_normal = 1 - l.bias;
  const int shift = 23 - l.mantissa + std::max(0, min_normal - e);
  if (shift >= 25) return sign;  // below half the smallest subnormal: rounds to zero
  std::uint32_t kept = significand >> shift;
  const std::uint32_t rest = significand & ((1u << shift) - 1);
  const std::uint32_t half = 1u << (shift - 1);
  if (rest > half || (rest == half && (kept & 1) != 0)) ++kept;
  std::uint32_t code = 0;
  if (e < min_normal) {
    code = kept;  // subnormal; a carry to 1 << mantissa is the smallest normal, encoded the same
  } else {
    int biased = e + l.bias;
    if (kept == (2u << l.mantissa)) {  // the rounding carried into the next binade
      kept >>= 1;
      ++biased;
    }
    if (biased > 0x7F >> l.mantissa) return sign | l.over;
    code = (static_cast<std::uint32_t>(biased) << l.mantissa) | (kept & ((1u << l.mantissa) - 1));
  }
  if (code > l.max) return sign | l.over;
  return static_cast<std::uint8_t>(sign | code);
}

float fp8_to_float(std::uint8_t q, Fp8Format f) {
  const Layout l = layout(f);
  const float sign = (q & 0x80) != 0 ? -1.0f : 1.0f;
  const std::uint32_t m = q & 0x7F;
  if (f == Fp8Format::kE4M3FN && m == 0x7F) return std::copysign(std::nanf(""), sign);
  if (f == Fp8Format::kE5M2 && m >= 0x7C) {
    return m == 0x7C ? sign * HUGE_VALF : std::copysign(std::nanf(""), sign);
  }
  const std::uint32_t exponent = m >> l.mantissa;
  const std::uint32_t mantissa = m & ((1u << l.mantissa) - 1);
  const int scale = exponent == 0 ? 1 - l.bias - l.mantissa : static_cast<int>(exponent) - l.bias - l.mantissa;
  const std::uint32_t significand = exponent == 0 ? mantissa : mantissa | (1u << l.mantissa);
  return sign * std::ldexp(static_cast<float>(significand), scale);
}

void validate(const Fp8Blocks& b) {
  if (b.rows <= 0 || b.cols <= 0) {
    throw UserError("fp8: a matrix of " + std::to_string(b.rows) + " x " + std::to_string(b.cols) +
                    " elements has nothing to quantize");
  }
  if (b.block_rows <= 0 || b.block_cols <= 0) {
    throw UserError("fp8: scale blocks of " + std::to_string(b.block_rows) + " x " + std::to_string(b.block_cols) +
                    " elements (each side must be at least 1)");
  }
}

void quantize_bf16(std::span<const std::uint16_t> x, const Fp8Blocks& b, Fp8Format f, std::span<std::uint8_t> q,
                   std::span<float> scale_inv) {
  validate(b);
  if (x.size() != b.elements() || q.size() != b.elements() || scale_inv.size() != b.scales()) {
    throw UserError("fp8: " + std::to_string(b.rows) + " x " + std::to_string(b.cols) + " in blocks of " +
                    std::to_string(b.block_rows) + " x " + std::to_string(b.block_cols) + " needs " +
                    std::to_string(b.elements()) + " inputs, " + std::to_string(b.elements()) + " outputs and " +
                    std::to_string(b.scales()) + " scales (got " + std::to_string(x.size()) + ", " +
                    std::to_string(q.size()) + ", " + std::to_string(scale_inv.size()) + ")");
  }
  const float fmax = fp8_max(f);
  for (std::int64_t br = 0; br < b.grid_rows(); ++br) {
    for (std::int64_t bc = 0; bc < b.grid_cols(); ++bc) {
      const std::int64_t r0 = br * b.block_rows;
      const std::int64_t r1 = std::min(b.rows, r0 + b.block_rows);
      const std::int64_t c0 = bc * b.block_cols;
      const auto width = static_cast<std::size_t>(std::min(b.cols, c0 + b.block_cols) - c0);
      // amax on the bit patterns: |x| orders as its bits do, and NaN and infinities sort above
      // every finite value.
      std::uint16_t amax = 0;
      for (std::int64_t r = r0; r < r1; ++r) {
        const std::uint16_t* row = x.data() + r * b.cols + c0;
        for (std::size_t c = 0; c < width; ++c) amax = std::max<std::uint16_t>(amax, row[c] & 0x7FFF);
      }
      if (amax >= 0x7F80) throw non_finite(x, b, br, bc);
      const float s = amax == 0 ? 1.0f : bf16_to_float(amax) / fmax;
      scale_inv[static_cast<std::size_t>(br * b.grid_cols() + bc)] = s;
      for (std::int64_t r = r0; r < r1; ++r) {
        const std::size_t at = static_cast<std::size_t>(r * b.cols + c0);
        if (f == Fp8Format::kE4M3FN) {
          quantize_row_e4m3fn(x.data() + at, width, s, q.data() + at);
        } else {
          quantize_row_e5m2(x.data() + at, width, s, q.data() + at);
        }
      }
    }
  }
}

}  // namespace tensorhub
