// Test buffers whose every 8-byte word encodes (version, tensor, index), so a reader can tell a
// torn or stale read from a good one without the manifest.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "tensorhub/hub.hpp"

namespace tensorhub::test {

inline std::uint64_t pattern_word(std::uint64_t version, std::uint64_t tensor, std::uint64_t i) {
  return (version << 40) ^ (tensor << 32) ^ (i * 2654435761u);
}

// `count` tensors of `bytes` each (multiple of 8) in the hub's registered pool. The pool goes
// with the hub, so Buffers must not be used after Hub::close().
struct Buffers {
  std::vector<std::span<std::uint64_t>> data;
  std::vector<Tensor> tensors;

  Buffers(Hub& hub, std::size_t count, std::uint64_t bytes, const std::string& prefix = "w") {
    for (std::size_t t = 0; t < count; ++t) {
      auto* p = static_cast<std::uint64_t*>(hub.allocate(bytes));
      data.emplace_back(p, bytes / 8);
      std::fill(data.back().begin(), data.back().end(), 0);
      tensors.push_back(
          host_tensor(prefix + std::to_string(t), DType::kF32, {static_cast<std::int64_t>(bytes / 4)}, p));
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
