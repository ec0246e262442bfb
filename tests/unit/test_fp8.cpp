// FP8 quantization (tensorhub/core/fp8.hpp) against vectors PyTorch made
// (tests/data/fp8/make_vectors.py): the cast of every bf16 value to e4m3fn and e5m2, and a
// 200 x 150 bf16 matrix (uneven blocks, a zero block, values down to FP8 subnormals) quantized
// per 128 x 128 block, per row and per tensor, bitwise. Then the round trip, rounding ties, and
// the errors for non-finite blocks and bad sizes.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "tensorhub/core/error.hpp"
#include "tensorhub/core/fp8.hpp"

namespace tensorhub {
namespace {

std::vector<unsigned char> vector_file(const std::string& name) {
  std::string path = TENSORHUB_FP8_DATA_DIR;  // appended, not a + b: GCC 12 warns on that (-Warray-bounds)
  path += '/';
  path += name;
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

float bf16(std::uint16_t b) {
  const std::uint32_t w = std::uint32_t{b} << 16;
  float f = 0;
  std::memcpy(&f, &w, 4);
  return f;
}

// make_vectors.py's input_bits(): the same matrix, bit for bit.
constexpr std::int64_t kRows = 200;
constexpr std::int64_t kCols = 150;
std::vector<std::uint16_t> input_bits() {
  std::vector<std::uint16_t> out(kRows * kCols);
  for (std::uint32_t i = 0; i < out.size(); ++i) {
    std::uint32_t h = i * 2654435761u + 12345u;
    h ^= h >> 15;
    h *= 2246822519u;
    h ^= h >> 13;
    const std::uint32_t sign = (h >> 31) & 1;
    const std::uint32_t exp = 100 + ((h >> 8) % 50);
    out[i] = static_cast<std::uint16_t>((sign << 15) | (exp << 7) | (h & 0x7F));
  }
  for (std::int64_t r = 128; r < kRows; ++r)
    for (std::int64_t c = 0; c < 128; ++c) out[r * kCols + c] = 0;
  return out;
}

TEST(Fp8, CastOfEveryBf16ValueMatchesPyTorch) {
  for (const auto f : {Fp8Format::kE4M3FN, Fp8Format::kE5M2}) {
    const auto want = vector_file("cast_" + fp8_format_name(f) + ".bin");
    ASSERT_EQ(want.size(), 65536u);
    std::size_t wrong = 0;
    for (std::uint32_t b = 0; b < 65536; ++b) {
      const auto got = fp8_from_float(bf16(static_cast<std::uint16_t>(b)), f);
      if (got != want[b] && ++wrong <= 5) {
        ADD_FAILURE() << fp8_format_name(f) << ": bf16 0x" << std::hex << b << " ("
                      << bf16(static_cast<std::uint16_t>(b)) << ") gave 0x" << int{got} << ", PyTorch 0x"
                      << int{want[b]};
      }
    }
    EXPECT_EQ(wrong, 0u) << fp8_format_name(f);
  }
}

TEST(Fp8, BlockQuantizationMatchesPyTorch) {
  const auto x = input_bits();
  struct Case {
    const char* name;
    Fp8Format f;
    std::int64_t block_rows, block_cols;
  };
  for (const Case& k :
       {Case{"e4m3fn_128x128", Fp8Format::kE4M3FN, 128, 128}, Case{"e5m2_128x128", Fp8Format::kE5M2, 128, 128},
        Case{"e4m3fn_row", Fp8Format::kE4M3FN, 1, kCols}, Case{"e4m3fn_tensor", Fp8Format::kE4M3FN, kRows, kCols}}) {
    SCOPED_TRACE(k.name);
    const Fp8Blocks b{kRows, kCols, k.block_rows, k.block_cols};
    const auto file = vector_file(std::string("blocks_") + k.name + ".bin");
    ASSERT_EQ(file.size(), b.scales() * 4 + b.elements());
    std::vector<float> want_scales(b.scales());
    std::memcpy(want_scales.data(), file.data(), b.scales() * 4);
    const std::vector<std::uint8_t> want_q(file.begin() + static_cast<std::ptrdiff_t>(b.scales() * 4), file.end());
    std::vector<std::uint8_t> q(b.elements());
    std::vector<float> scales(b.scales());
    quantize_bf16(x, b, k.f, q, scales);
    EXPECT_EQ(scales, want_scales);
    EXPECT_EQ(q, want_q);
    if (k.block_rows == 128) {
      EXPECT_EQ(scales[2], 1.0f) << "the zero block's scale";
      for (std::int64_t c = 0; c < 128; ++c) EXPECT_EQ(q[150 * kCols + c], 0u);
    }
    // Dequantised, every element is within half an FP8 step of the input.
    for (std::int64_t r = 0; r < kRows; ++r) {
      for (std::int64_t c = 0; c < kCols; ++c) {
        const auto i = static_cast<std::size_t>(r * kCols + c);
        const float s = scales[static_cast<std::size_t>((r / k.block_rows) * b.grid_cols() + c / k.block_cols)];
        const float back = fp8_to_float(q[i], k.f) * s;
        // Half a step: 2^-4 (e4m3fn) or 2^-3 (e5m2) of the value, or half the subnormal step.
        const bool e4 = k.f == Fp8Format::kE4M3FN;
        const float step = (e4 ? 0x1p-4f : 0x1p-3f) * std::fabs(bf16(x[i])) + s * (e4 ? 0x1p-10f : 0x1p-17f);
        ASSERT_LE(std::fabs(back - bf16(x[i])), step) << r << "," << c;
      }
    }
  }
}

TEST(Fp8, EveryCodeRoundTripsAndTiesGoToEven) {
  for (const auto f : {Fp8Format::kE4M3FN, Fp8Format::kE5M2}) {
    for (std::uint32_t c = 0; c < 256; ++c) {
      const float v = fp8_to_float(static_cast<std::uint8_t>(c), f);
      if (std::isnan(v)) continue;
      EXPECT_EQ(fp8_from_float(v, f), c) << fp8_format_name(f) << " code " << c;
    }
  }
  // e4m3fn: 1.0625 lies halfway between 1 (mantissa 000, even) and 1.125 (001).
  EXPECT_EQ(fp8_from_float(1.0625f, Fp8Format::kE4M3FN), 0x38);
  EXPECT_EQ(fp8_from_float(1.1875f, Fp8Format::kE4M3FN), 0x3A);  // between 001 and 010: to 010
  EXPECT_EQ(fp8_from_float(464.0f, Fp8Format::kE4M3FN), 0x7E);   // the tie above 448: down to 448
  EXPECT_EQ(fp8_from_float(465.0f, Fp8Format::kE4M3FN), 0x7E);   // above: saturated, as PyTorch
  EXPECT_EQ(fp8_from_float(-HUGE_VALF, Fp8Format::kE4M3FN), 0xFE);
  EXPECT_EQ(fp8_from_float(std::nanf(""), Fp8Format::kE4M3FN), 0x7F);
  EXPECT_EQ(fp8_from_float(-0.0f, Fp8Format::kE4M3FN), 0x80);
  EXPECT_EQ(fp8_from_float(0x1p-10f, Fp8Format::kE4M3FN), 0x00);  // half the smallest subnormal: to even 0
  EXPECT_EQ(fp8_from_float(0x1.8p-10f, Fp8Format::kE4M3FN), 0x01);
  EXPECT_EQ(fp8_from_float(1e6f, Fp8Format::kE5M2), 0x7C);  // e5m2 overflows to infinity
  EXPECT_EQ(fp8_max(Fp8Format::kE4M3FN), fp8_to_float(0x7E, Fp8Format::kE4M3FN));
  EXPECT_EQ(fp8_max(Fp8Format::kE5M2), fp8_to_float(0x7B, Fp8Format::kE5M2));
}

// The quantizer's branch-free, vectorized encoder against the reference one: every bf16 value,
// every midpoint between neighbouring FP8 values and the floats either side of it, and a million
// float32 bit patterns.
TEST(Fp8, FastPathEqualsTheCast) {
  for (const auto f : {Fp8Format::kE4M3FN, Fp8Format::kE5M2}) {
    std::vector<float> probes;
    for (std::uint32_t b = 0; b < 65536; ++b) probes.push_back(bf16(static_cast<std::uint16_t>(b)));
    for (std::uint32_t c = 0; c < 0x7F; ++c) {
      const float lo = fp8_to_float(static_cast<std::uint8_t>(c), f);
      const float hi = fp8_to_float(static_cast<std::uint8_t>(c + 1), f);
      if (!std::isfinite(lo) || !std::isfinite(hi)) continue;
      const float mid = lo + (hi - lo) / 2;
      for (const float v : {mid, std::nextafter(mid, 0.0f), std::nextafter(mid, HUGE_VALF), lo, hi}) {
        probes.push_back(v);
        probes.push_back(-v);
      }
    }
    std::uint32_t h = 1;
    for (int i = 0; i < 1000000; ++i) {
      h = h * 1664525u + 1013904223u;
      float v = 0;
      std::memcpy(&v, &h, 4);
      probes.push_back(v);
    }
    std::size_t wrong = 0;
    for (const float v : probes) {
      if (fp8_fast_for_test(v, f) != fp8_from_float(v, f) && ++wrong <= 5) {
        ADD_FAILURE() << fp8_format_name(f) << ": " << v << " fast 0x" << std::hex << int{fp8_fast_for_test(v, f)}
                      << ", cast 0x" << int{fp8_from_float(v, f)};
      }
    }
    EXPECT_EQ(wrong, 0u) << fp8_format_name(f);
  }
}

TEST(Fp8, OneElementAndBadInputs) {
  const std::vector<std::uint16_t> one{0xC0A0};  // -5
  std::vector<std::uint8_t> q(1);
  std::vector<float> s(1);
  quantize_bf16(one, Fp8Blocks{1, 1}, Fp8Format::kE4M3FN, q, s);
  EXPECT_EQ(s[0], 5.0f / 448.0f);
  EXPECT_EQ(q[0], 0xFE) << "-448";

  std::vector<std::uint16_t> x(4 * 4, 0x3F80);  // ones
  x[9] = 0x7FC0;                                // NaN in block (1, 0) of 2 x 2 blocks
  std::vector<std::uint8_t> q16(16);
  std::vector<float> s4(4);
  try {
    quantize_bf16(x, Fp8Blocks{4, 4, 2, 2}, Fp8Format::kE4M3FN, q16, s4);
    ADD_FAILURE() << "a NaN input was quantized";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("element (2, 1) of scale block (1, 0) is NaN or infinite"), std::string::npos)
        << e.what();
  }
  x[9] = 0x7F80;  // +inf
  EXPECT_THROW(quantize_bf16(x, Fp8Blocks{4, 4, 2, 2}, Fp8Format::kE5M2, q16, s4), UserError);
  x[9] = 0x3F80;
  EXPECT_THROW(quantize_bf16(x, Fp8Blocks{4, 4, 2, 2}, Fp8Format::kE4M3FN, q16, std::span(s4).first(3)), UserError);
  EXPECT_THROW(quantize_bf16(x, Fp8Blocks{4, 4, 0, 2}, Fp8Format::kE4M3FN, q16, s4), UserError);
  EXPECT_THROW(quantize_bf16(x, Fp8Blocks{0, 4}, Fp8Format::kE4M3FN, q16, s4), UserError);
}

}  // namespace
}  // namespace tensorhub
