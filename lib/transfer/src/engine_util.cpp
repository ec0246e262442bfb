#include "engine_util.hpp"

#include <algorithm>
#include <atomic>
#include <exception>

#include "tensorhub/core/error.hpp"

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

std::vector<std::uint32_t> wanted_chunks(const Manifest& m, std::span<const Destination> dests) {
  std::vector<std::uint32_t> out;
  for (const auto& d : dests) {
    require(d.tensor < m.tensors.size(), "destination tensor index out of range");
    const auto& e = m.tensors[d.tensor];
    for (std::uint32_t c = 0; c < e.num_chunks; ++c) {
      const auto& ch = m.chunks[e.first_chunk + c];
      if (d.runs.empty() || touches(d.runs, ch.offset, ch.offset + ch.length)) out.push_back(e.first_chunk + c);
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::uint64_t wanted_bytes(const Manifest& m, std::span<const Destination> dests) {
  std::uint64_t n = 0;
  for (const auto& d : dests) n += d.runs.empty() ? m.tensors[d.tensor].spec.bytes() : run_bytes(d.runs);
  return n;
}

}  // namespace tensorhub::transfer
