#include "tensorhub/core/tensor.hpp"

#include <utility>

#include "tensorhub/core/error.hpp"

namespace tensorhub {

std::uint64_t TensorSpec::numel() const {
  std::uint64_t n = 1;
  for (const auto d : shape) {
    if (d < 0) throw UserError("tensor '" + name + "' has a negative dimension");
    n *= static_cast<std::uint64_t>(d);
  }
  return n;
}

Tensor host_tensor(std::string name, DType dtype, std::vector<std::int64_t> shape, void* data) {
  Tensor t;
  t.spec = TensorSpec{std::move(name), dtype, std::move(shape)};
  t.data = data;
  t.bytes = t.spec.bytes();
  return t;
}

std::string describe(const TensorSpec& spec) {
  std::string s(dtype_name(spec.dtype));
  s += '[';
  for (std::size_t i = 0; i < spec.shape.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(spec.shape[i]);
  }
  s += ']';
  return s;
}

}  // namespace tensorhub
