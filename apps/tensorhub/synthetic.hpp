// Synthetic transformer weights for demos, benchmarks and tests: realistic names and shapes
// (embedding, per-layer attention and MLP projections, norms, LM head), bf16, sized to a
// requested total, laid out in one page-aligned arena per rank (as trainers with flat parameter
// buffers do), and filled with a version-dependent pattern whose first 8 bytes per tensor are a
// version stamp.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "tensorhub/core/tensor.hpp"

namespace tensorhub::cli {

// Tensor specs of a model of about `total_bytes` in about `tensors` tensors.
std::vector<TensorSpec> synthetic_model(std::uint64_t total_bytes, std::uint32_t tensors);

// A page-aligned buffer holding a list of tensors back to back.
class Arena {
 public:
  explicit Arena(std::vector<TensorSpec> specs);
  std::span<const Tensor> tensors() const { return tensors_; }
  std::uint64_t bytes() const { return bytes_; }
  // Writes the pattern of `version` into every tensor (stamp first).
  void fill(std::uint64_t version);
  // Zeroes every byte (and faults the pages in).
  void clear();
  // The version stamp of tensor i, and whether every sampled element matches that version.
  std::uint64_t stamp(std::size_t i) const;
  bool matches(std::uint64_t version) const;

 private:
  struct Free {
    void operator()(void* p) const;
  };
  std::vector<TensorSpec> specs_;
  std::vector<Tensor> tensors_;
  std::unique_ptr<unsigned char, Free> data_;
  std::uint64_t bytes_ = 0;
};

}  // namespace tensorhub::cli
