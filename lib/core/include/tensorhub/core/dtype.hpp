// Element types of published tensors and how large they are.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace tensorhub {

enum class DType : std::uint8_t { kF32, kF16, kBF16, kF64, kI8, kU8, kI16, kI32, kI64, kBool };

// Bytes per element.
std::size_t dtype_size(DType dtype);
// Canonical lower-case name: "f32", "bf16", ...
std::string_view dtype_name(DType dtype);
// Parses a canonical name (also accepts "float32", "bfloat16", ...); throws UserError.
DType parse_dtype(std::string_view name);

enum class MemoryKind : std::uint8_t { kHost, kCuda };
std::string_view memory_kind_name(MemoryKind kind);

}  // namespace tensorhub
