// A tensor as the caller holds it: a named, typed, shaped view of memory.
// TensorHub never owns this memory; it only references it (publish) or fills it (pull).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "tensorhub/core/box.hpp"
#include "tensorhub/core/dtype.hpp"

namespace tensorhub {

struct TensorSpec {
  TensorSpec() = default;
  // A plain tensor (the box fields below stay empty).
  TensorSpec(std::string name_, DType dtype_, std::vector<std::int64_t> shape_)
      : name(std::move(name_)), dtype(dtype_), shape(std::move(shape_)) {}

  std::string name;
  DType dtype = DType::kF32;
  std::vector<std::int64_t> shape;
  // Resharding (box.hpp): set when this tensor holds a box of a global tensor (a trainer's FSDP
  // or tensor-parallel shard): the global tensor's name and shape, and where this tensor's box
  // starts in it (its extent is `shape`). All empty for a plain tensor.
  std::string global_name;
  std::vector<std::int64_t> global_shape;
  std::vector<std::int64_t> box_offset;

  bool sliced() const { return !global_name.empty(); }
  Box box() const { return Box{box_offset, shape}; }
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

// "bf16[4096,4096]"; a box of a global tensor: "bf16[1024,4096] of w[4096,4096] at [1024,0]"
std::string describe(const TensorSpec& spec);

// A tensor holding box `box_offset` + shape of global tensor `global_name` (shape `global_shape`).
Tensor host_slice(std::string name, DType dtype, std::vector<std::int64_t> shape, void* data, std::string global_name,
                  std::vector<std::int64_t> global_shape, std::vector<std::int64_t> box_offset);

}  // namespace tensorhub
