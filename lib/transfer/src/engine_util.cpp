#include "engine_util.hpp"

#include <algorithm>
#include <atomic>
#include <exception>

namespace tensorhub::transfer {

std::string chunk_name(const Manifest& m, std::uint32_t c) {
  const auto& spec = m.chunks[c];
  const auto& t = m.tensors[spec.tensor];
  return "tensor '" + t.spec.name + "' chunk " + std::to_string(c - t.first_chunk) + " (bytes " +
         std::to_string(spec.offset) + ".." + std::to_string(spec.offset + spec.length) + ")";
}

std::string current_error_text() {
  try {
    throw;
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "pull failed";
  }
}

void mark_held(unsigned char* progress_bytes, std::uint32_t chunk) noexcept {
  if (progress_bytes == nullptr) return;
  std::atomic_ref<unsigned char>(progress_bytes[chunk]).store(1, std::memory_order_release);
}

std::vector<coord::ChunkRange> to_ranges(std::vector<std::uint32_t> chunks) {
  std::sort(chunks.begin(), chunks.end());
  std::vector<coord::ChunkRange> out;
  for (const auto c : chunks) {
    if (!out.empty() && out.back().first + out.back().count >= c + 1) continue;  // duplicate
    if (!out.empty() && out.back().first + out.back().count == c) {
      ++out.back().count;
    } else {
      out.push_back(coord::ChunkRange{c, 1});
    }
  }
  return out;
}

}  // namespace tensorhub::transfer
