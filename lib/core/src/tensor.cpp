#include "tensorhub/core/tensor.hpp"

#include <algorithm>
#include <utility>

#include "tensorhub/core/error.hpp"

namespace tensorhub {

namespace {

[[noreturn]] void too_large(const TensorSpec& spec, const char* what) {
  throw UserError("tensor '" + spec.name + "' " + describe(spec) + ": its " + what + " does not fit in 64 bits");
}

}  // namespace

std::uint64_t TensorSpec::numel() const {
  for (const auto d : shape) {
    if (d < 0) throw UserError("tensor '" + name + "' has a negative dimension");
  }
  if (std::find(shape.begin(), shape.end(), 0) != shape.end()) return 0;  // even if the rest overflows
  std::uint64_t n = 1;
  for (const auto d : shape) {
    if (__builtin_mul_overflow(n, static_cast<std::uint64_t>(d), &n)) too_large(*this, "element count");
  }
  return n;
}

std::uint64_t TensorSpec::bytes() const {
  std::uint64_t b = 0;
  if (__builtin_mul_overflow(numel(), std::uint64_t{dtype_size(dtype)}, &b)) too_large(*this, "byte size");
  return b;
}

Tensor host_tensor(std::string name, DType dtype, std::vector<std::int64_t> shape, void* data) {
  Tensor t;
  t.spec = TensorSpec{std::move(name), dtype, std::move(shape)};
  t.data = data;
  t.bytes = t.spec.bytes();
  return t;
}

Tensor host_slice(std::string name, DType dtype, std::vector<std::int64_t> shape, void* data, std::string global_name,
                  std::vector<std::int64_t> global_shape, std::vector<std::int64_t> box_offset) {
  Tensor t = host_tensor(std::move(name), dtype, std::move(shape), data);
  t.spec.global_name = std::move(global_name);
  t.spec.global_shape = std::move(global_shape);
  t.spec.box_offset = std::move(box_offset);
  return t;
}

namespace {

std::string dims(const std::vector<std::int64_t>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s + "]";
}

}  // namespace

std::string describe(const TensorSpec& spec) {
  std::string s = std::string(dtype_name(spec.dtype)) + dims(spec.shape);
  if (spec.sliced()) s += " of " + spec.global_name + dims(spec.global_shape) + " at " + dims(spec.box_offset);
  return s;
}

}  // namespace tensorhub
