#include "tensorhub/core/dtype.hpp"

#include <array>
#include <string>
#include <utility>

#include "tensorhub/core/error.hpp"

namespace tensorhub {
namespace {

struct DTypeInfo {
  DType dtype;
  std::size_t size;
  std::string_view name;
  std::string_view alias;
};

constexpr std::array<DTypeInfo, 10> kTypes{{
    {DType::kF32, 4, "f32", "float32"},
    {DType::kF16, 2, "f16", "float16"},
    {DType::kBF16, 2, "bf16", "bfloat16"},
    {DType::kF64, 8, "f64", "float64"},
    {DType::kI8, 1, "i8", "int8"},
    {DType::kU8, 1, "u8", "uint8"},
    {DType::kI16, 2, "i16", "int16"},
    {DType::kI32, 4, "i32", "int32"},
    {DType::kI64, 8, "i64", "int64"},
    {DType::kBool, 1, "bool", "boolean"},
}};

const DTypeInfo& info(DType dtype) {
  for (const auto& t : kTypes) {
    if (t.dtype == dtype) return t;
  }
  throw ContractViolation("unknown dtype enumerator " + std::to_string(static_cast<int>(dtype)));
}

}  // namespace

std::size_t dtype_size(DType dtype) { return info(dtype).size; }
std::string_view dtype_name(DType dtype) { return info(dtype).name; }

DType parse_dtype(std::string_view name) {
  for (const auto& t : kTypes) {
    if (name == t.name || name == t.alias) return t.dtype;
  }
  throw UserError("unknown dtype '" + std::string(name) +
                  "' (expected one of f32 f16 bf16 f64 i8 u8 i16 i32 i64 bool)");
}

std::string_view memory_kind_name(MemoryKind kind) { return kind == MemoryKind::kCuda ? "cuda" : "host"; }

}  // namespace tensorhub
