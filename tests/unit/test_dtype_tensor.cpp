// lib/core dtype.hpp and tensor.hpp: element sizes, canonical names and aliases, parse errors,
// memory kind names; TensorSpec::numel/bytes (scalars, zero and negative dimensions),
// host_tensor and describe().
#include <gtest/gtest.h>

#include <array>
#include <string>

#include "tensorhub/core/dtype.hpp"
#include "tensorhub/core/error.hpp"
#include "tensorhub/core/tensor.hpp"

namespace tensorhub {
namespace {

struct DTypeRow {
  DType dtype;
  std::size_t size;
  const char* name;
  const char* alias;
};

constexpr std::array<DTypeRow, 10> kAll{{
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

TEST(DType, SizesAndCanonicalNames) {
  for (const auto& row : kAll) {
    EXPECT_EQ(dtype_size(row.dtype), row.size) << row.name;
    EXPECT_EQ(dtype_name(row.dtype), row.name);
  }
}

TEST(DType, ParseAcceptsCanonicalNamesAndAliases) {
  for (const auto& row : kAll) {
    EXPECT_EQ(parse_dtype(row.name), row.dtype) << row.name;
    EXPECT_EQ(parse_dtype(row.alias), row.dtype) << row.alias;
    EXPECT_EQ(parse_dtype(dtype_name(row.dtype)), row.dtype);  // name -> parse round trip
  }
}

TEST(DType, ParseRejectsUnknownNamesWithUserError) {
  for (const char* bad : {"", "F32", "float", "fp32", "f32 ", "u16", "complex64"}) {
    EXPECT_THROW(parse_dtype(bad), UserError) << "'" << bad << "'";
  }
  try {
    parse_dtype("fp8");
    FAIL() << "expected UserError";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("'fp8'"), std::string::npos) << e.what();
  }
}

TEST(DType, UnknownEnumeratorIsAContractViolation) {
  const auto bogus = static_cast<DType>(200);
  EXPECT_THROW(dtype_size(bogus), ContractViolation);
  EXPECT_THROW(dtype_name(bogus), ContractViolation);
}

TEST(DType, MemoryKindNames) {
  EXPECT_EQ(memory_kind_name(MemoryKind::kHost), "host");
  EXPECT_EQ(memory_kind_name(MemoryKind::kCuda), "cuda");
}

TEST(TensorSpec, NumelAndBytes) {
  const TensorSpec t{"w", DType::kBF16, {4096, 1024}};
  EXPECT_EQ(t.numel(), 4096u * 1024);
  EXPECT_EQ(t.bytes(), 4096u * 1024 * 2);

  const TensorSpec v{"b", DType::kF64, {3}};
  EXPECT_EQ(v.numel(), 3u);
  EXPECT_EQ(v.bytes(), 24u);
}

TEST(TensorSpec, ScalarHasOneElement) {
  const TensorSpec s{"step", DType::kI64, {}};
  EXPECT_EQ(s.numel(), 1u);
  EXPECT_EQ(s.bytes(), 8u);
}

TEST(TensorSpec, ZeroDimensionMeansZeroBytes) {
  const TensorSpec z{"empty", DType::kF32, {0, 128}};
  EXPECT_EQ(z.numel(), 0u);
  EXPECT_EQ(z.bytes(), 0u);
}

TEST(TensorSpec, NegativeDimensionThrowsUserErrorNamingTheTensor) {
  const TensorSpec bad{"neg", DType::kF32, {4, -1}};
  EXPECT_THROW(bad.numel(), UserError);
  try {
    (void)bad.bytes();
    FAIL() << "expected UserError";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("'neg'"), std::string::npos) << e.what();
  }
}

TEST(TensorSpec, EqualityComparesAllFields) {
  const TensorSpec a{"w", DType::kF32, {2, 3}};
  EXPECT_EQ(a, (TensorSpec{"w", DType::kF32, {2, 3}}));
  EXPECT_NE(a, (TensorSpec{"x", DType::kF32, {2, 3}}));
  EXPECT_NE(a, (TensorSpec{"w", DType::kF16, {2, 3}}));
  EXPECT_NE(a, (TensorSpec{"w", DType::kF32, {3, 2}}));
}

TEST(Tensor, HostTensorBufferIsExactlySpecBytes) {
  float data[6] = {};
  const Tensor t = host_tensor("w", DType::kF32, {2, 3}, data);
  EXPECT_EQ(t.spec.name, "w");
  EXPECT_EQ(t.spec.dtype, DType::kF32);
  EXPECT_EQ(t.spec.shape, (std::vector<std::int64_t>{2, 3}));
  EXPECT_EQ(t.data, static_cast<void*>(data));
  EXPECT_EQ(t.bytes, sizeof data);
  EXPECT_EQ(t.memory, MemoryKind::kHost);
}

TEST(Tensor, DescribeFormatsDtypeAndShape) {
  EXPECT_EQ(describe(TensorSpec{"w", DType::kBF16, {4096, 4096}}), "bf16[4096,4096]");
  EXPECT_EQ(describe(TensorSpec{"b", DType::kF32, {7}}), "f32[7]");
  EXPECT_EQ(describe(TensorSpec{"s", DType::kI64, {}}), "i64[]");
  EXPECT_EQ(describe(TensorSpec{"m", DType::kBool, {1, 0, 3}}), "bool[1,0,3]");
}

}  // namespace
}  // namespace tensorhub
