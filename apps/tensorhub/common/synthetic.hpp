// Synthetic transformer weights for demos, benchmarks and tests: realistic names and shapes
// (embedding, per-layer attention and MLP projections, norms, LM head), bf16, sized to a
// requested total, laid out in one page-aligned arena per rank (as trainers with flat parameter
// buffers do), and filled with a version-dependent pattern whose first 8 bytes per tensor are a
// version stamp.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <span>
#include <vector>

#include "tensorhub/core/tensor.hpp"

namespace tensorhub::cli {

// --tensors of a synthetic model: 1 to limits::kMaxTensorsPerVersion (UserError otherwise).
void check_synthetic_tensors(std::uint32_t tensors);

// Tensor specs of a model of about `total_bytes` in about `tensors` tensors.
std::vector<TensorSpec> synthetic_model(std::uint64_t total_bytes, std::uint32_t tensors);

// A page-aligned buffer holding a list of tensors back to back.
class Arena {
 public:
  // Owns its memory (page-aligned heap).
  explicit Arena(std::vector<TensorSpec> specs);
  // Lays the tensors out in `memory` (at least bytes_needed(specs)), which it does not own:
  // e.g. memory from Hub::allocate.
  Arena(std::vector<TensorSpec> specs, void* memory);
  static std::uint64_t bytes_needed(const std::vector<TensorSpec>& specs);
  std::span<const Tensor> tensors() const { return tensors_; }
  std::uint64_t bytes() const { return bytes_; }
  // The whole buffer (tensors and the padding between them), e.g. to send it in one piece.
  unsigned char* data() const { return data_; }
  // Writes the pattern of `version` into every tensor (stamp first).
  void fill(std::uint64_t version);
  // Zeroes every byte (and faults the pages in).
  void clear();
  // The version stamp of tensor i, and whether every sampled element matches that version.
  std::uint64_t stamp(std::size_t i) const;
  bool matches(std::uint64_t version) const;

 private:
  void lay_out(unsigned char* base);
  std::vector<TensorSpec> specs_;
  std::vector<Tensor> tensors_;
  std::unique_ptr<void, void (*)(void*)> owned_{nullptr, &std::free};  // null when not ours
  unsigned char* data_ = nullptr;
  std::uint64_t bytes_ = 0;
};

}  // namespace tensorhub::cli
