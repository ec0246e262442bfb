#include "snapshot_header_target.hpp"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "header.hpp"
#include "layout.hpp"
#include "tensorhub/core/manifest_json.hpp"

namespace tensorhub::snapshot::fuzz {
namespace {

[[noreturn]] void broken(const std::string& what) {
  std::fprintf(stderr, "invariant broken: %s\n", what.c_str());
  std::abort();
}

std::optional<std::uint64_t> number(std::string_view v) {
  std::uint64_t out = 0;
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  if (ec != std::errc() || end != v.data() + v.size()) return std::nullopt;
  return out;
}

format::RawHeader split(std::string_view text) {
  format::RawHeader raw;
  raw.format_version = kFormatVersion;
  const auto blank = text.find("\n\n");
  if (blank == std::string_view::npos) {
    raw.manifest_json = std::string(text);
    return raw;
  }
  std::string_view head = text.substr(0, blank);
  raw.manifest_json = std::string(text.substr(blank + 2));
  while (!head.empty()) {
    const auto nl = head.find('\n');
    const std::string_view line = head.substr(0, nl);
    head = nl == std::string_view::npos ? std::string_view() : head.substr(nl + 1);
    const auto eq = line.find('=');
    if (eq == std::string_view::npos) continue;
    const auto key = line.substr(0, eq);
    const auto value = line.substr(eq + 1);
    if (key == "format_version")
      raw.format_version = number(value);
    else if (key == "version")
      raw.version = number(value);
    else if (key == "chunk_bytes")
      raw.chunk_bytes = number(value);
    else if (key == "model")
      raw.model = std::string(value);
    else if (key == "created_by")
      raw.created_by = std::string(value);
    else if (key == "created_at")
      raw.created_at = std::string(value);
  }
  return raw;
}

// What the reader and writer rely on for every header parse_header accepts.
void check_invariants(const format::Header& h) {
  const Manifest& m = h.manifest;
  if (!(manifest_from_json(manifest_to_json(m)) == m)) broken("manifest JSON round trip");
  if (!(format::parse_header(format::make_header(m, "b", "a"), "again").manifest == m)) broken("header round trip");
  std::uint64_t next_chunk = 0;
  for (std::uint32_t i = 0; i < m.tensors.size(); ++i) {
    const auto& e = m.tensors[i];
    const auto escaped = format::dataset_name(e.spec.name);
    if (escaped.find('/') != std::string::npos || escaped.empty() || escaped == ".") broken("dataset name");
    if (format::tensor_name(escaped) != e.spec.name) broken("dataset name round trip");
    if (e.first_chunk != next_chunk) broken("chunk numbering");
    next_chunk += e.num_chunks;
    const std::uint64_t bytes = e.spec.bytes();
    std::uint64_t sum = 0;
    for (std::uint32_t c = 0; c < e.num_chunks; ++c) {
      const auto& spec = m.chunks[e.first_chunk + c];
      if (spec.tensor != i || spec.offset != c * m.chunk_bytes || spec.length == 0 || spec.length > m.chunk_bytes) {
        broken("chunk spec of '" + e.spec.name + "'");
      }
      sum += spec.length;
    }
    if (sum != bytes) broken("chunk lengths of '" + e.spec.name + "'");

    const std::uint64_t es = dtype_size(e.spec.dtype);
    const layout::PiecePlan plan(bytes, es, m.chunk_bytes, 2 * m.chunk_bytes);
    if (plan.chunks() != e.num_chunks) broken("piece plan chunk count of '" + e.spec.name + "'");
    std::vector<std::uint64_t> dims(e.spec.shape.begin(), e.spec.shape.end());
    std::uint64_t expect_chunk = 0;
    for (std::uint64_t p = 0; p < std::min<std::uint64_t>(plan.size(), 16); ++p) {
      const auto piece = plan.at(p);
      if (piece.first_chunk != expect_chunk || piece.end_chunk <= piece.first_chunk) broken("piece chunks");
      expect_chunk = piece.end_chunk;
      if (dims.empty()) continue;
      const auto blocks = layout::flat_range_blocks(dims, piece.first_elem, piece.num_elems);
      if (blocks.size() > 2 * dims.size() - 1) broken("too many hyperslabs");
      std::uint64_t covered = 0;
      for (const auto& b : blocks) {
        std::uint64_t n = 1;
        for (std::size_t d = 0; d < dims.size(); ++d) {
          if (b.start[d] + b.count[d] > dims[d]) broken("hyperslab out of bounds");
          n *= b.count[d];
        }
        covered += n;
      }
      if (covered != piece.num_elems) broken("hyperslabs do not cover the piece");
    }
  }
  if (next_chunk != m.chunks.size()) broken("chunk count");
}

}  // namespace

int run_header_input(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  format::Header h;
  try {
    h = format::parse_header(split(text), "fuzz.h5");
  } catch (const SnapshotError&) {
    return 0;  // rejected cleanly: the expected outcome for bad input
  }
  check_invariants(h);
  return 0;
}

}  // namespace tensorhub::snapshot::fuzz
