// Test buffers whose every 8-byte word encodes (version, tensor, index), so a reader can tell a
// torn or stale read from a good one without the manifest.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "tensorhub/core/tensor.hpp"

namespace tensorhub::test {

inline std::uint64_t pattern_word(std::uint64_t version, std::uint64_t tensor, std::uint64_t i) {
  return (version << 40) ^ (tensor << 32) ^ (i * 2654435761u);
}

// `count` tensors of `bytes` each (multiple of 8), in one vector per tensor.
struct Buffers {
  std::vector<std::vector<std::uint64_t>> data;
  std::vector<Tensor> tensors;

  Buffers(std::size_t count, std::uint64_t bytes, const std::string& prefix = "w") {
    data.resize(count, std::vector<std::uint64_t>(bytes / 8, 0));
    for (std::size_t t = 0; t < count; ++t) {
      tensors.push_back(host_tensor(prefix + std::to_string(t), DType::kF32,
                                    {static_cast<std::int64_t>(bytes / 4)}, data[t].data()));
    }
  }
  void fill(std::uint64_t version) {
    for (std::size_t t = 0; t < data.size(); ++t) {
      for (std::size_t i = 0; i < data[t].size(); ++i) data[t][i] = pattern_word(version, t, i);
    }
  }
  // Number of words that do not belong to `version`.
  std::size_t mismatches(std::uint64_t version) const {
    std::size_t bad = 0;
    for (std::size_t t = 0; t < data.size(); ++t) {
      for (std::size_t i = 0; i < data[t].size(); ++i) bad += data[t][i] != pattern_word(version, t, i);
    }
    return bad;
  }
};

}  // namespace tensorhub::test
