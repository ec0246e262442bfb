// FP8 quantization of bf16 weights as FP8 checkpoints store them (issue 45; README "FP8"):
// e4m3fn (4 exponent bits, bias 7, no infinities, largest 448, S.1111.111 is NaN) or e5m2 (5
// exponent bits, bias 15, IEEE-like: infinities, largest finite 57344), one float32 scale per
// block of `block_rows x block_cols` elements of a row-major matrix (DeepSeek-V3, Kimi-K2 and
// Qwen3 FP8 checkpoints: 128 x 128; a block of 1 x cols is a per-row scale, the whole matrix a
// per-tensor one).
//
// The arithmetic, exactly (bitwise equal to PyTorch's, tests/data/fp8/make_vectors.py):
// - each bf16 element widened to float32 (exact);
// - per block, amax = the largest |x|; scale_inv = amax / fmax in float32 (fmax 448 or 57344),
//   the value a checkpoint stores as `weight_scale_inv` (dequantised = q x scale_inv); a block
//   of zeros gets scale_inv = 1 (its q are zeros);
// - q = fp8(x / scale_inv): IEEE float32 division, then the float32 value rounded to the nearest
//   FP8 value, ties to even, subnormals included. |x / scale_inv| <= fmax up to the division's
//   rounding, which rounds back to fmax, so no value saturates.
// - an input block holding NaN or an infinity has no scale: quantize_bf16 throws UserError
//   naming the block. (fp8_from_float on its own follows PyTorch's cast: e4m3fn saturates,
//   mapping infinities and anything that rounds above 448 to +-448, NaN to NaN; e5m2 maps what
//   rounds above 57344 to infinity.)
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace tensorhub {

enum class Fp8Format : std::uint8_t { kE4M3FN, kE5M2 };

std::string fp8_format_name(Fp8Format f);  // "e4m3fn", "e5m2"
float fp8_max(Fp8Format f);                // 448, 57344

// One float32 to FP8 bits, rounding to nearest even (PyTorch's float32 -> float8 cast).
std::uint8_t fp8_from_float(float x, Fp8Format f);
// The branch-free form the quantizer's inner loop uses: equal to fp8_from_float for every input
// (a test checks it on every bf16 value and on float32 values around each rounding boundary).
std::uint8_t fp8_fast_for_test(float x, Fp8Format f);
// FP8 bits to float32 (exact).
float fp8_to_float(std::uint8_t q, Fp8Format f);

// How a rows x cols matrix is cut into scale blocks (the last ones may be smaller).
struct Fp8Blocks {
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  std::int64_t block_rows = 128;
  std::int64_t block_cols = 128;
  std::int64_t grid_rows() const { return (rows + block_rows - 1) / block_rows; }
  std::int64_t grid_cols() const { return (cols + block_cols - 1) / block_cols; }
  std::size_t scales() const { return static_cast<std::size_t>(grid_rows() * grid_cols()); }
  std::size_t elements() const { return static_cast<std::size_t>(rows * cols); }
};

// Throws UserError for a shape or block that is not positive.
void validate(const Fp8Blocks& b);

// Quantizes the row-major bf16 matrix `x` (bit patterns) into `q` (elements() bytes) and
// `scale_inv` (scales() floats, block-row-major). Throws UserError for sizes that do not match
// `b`, or for a block holding NaN or an infinity (nothing of that block is written).
void quantize_bf16(std::span<const std::uint16_t> x, const Fp8Blocks& b, Fp8Format f, std::span<std::uint8_t> q,
                   std::span<float> scale_inv);

}  // namespace tensorhub
