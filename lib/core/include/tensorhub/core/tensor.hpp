// A tensor as the caller holds it: a named, typed, shaped view of memory.
// TensorHub never owns this memory; it only references it (publish) or fills it (pull).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tensorhub/core/dtype.hpp"

namespace tensorhub {

struct TensorSpec {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<std::int64_t> shape;

  // Element count and byte size. Throw UserError naming the tensor for a negative dimension, or
  // when either does not fit in 64 bits (u8[2^61+1, 8] is not 8 bytes).
  std::uint64_t numel() const;
  std::uint64_t bytes() const;
  bool operator==(const TensorSpec&) const = default;
};

struct Tensor {
  TensorSpec spec;
  void* data = nullptr;
  std::uint64_t bytes = 0;  // size of the buffer at `data`; must be >= spec.bytes()
  MemoryKind memory = MemoryKind::kHost;
};

// Convenience constructor: a host tensor whose buffer is exactly spec.bytes().
Tensor host_tensor(std::string name, DType dtype, std::vector<std::int64_t> shape, void* data);

// "bf16[4096,4096]"
std::string describe(const TensorSpec& spec);

}  // namespace tensorhub
