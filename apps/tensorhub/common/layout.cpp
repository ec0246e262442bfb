#include "common/layout.hpp"

#include <cstring>
#include <map>
#include <string_view>

#include "tensorhub/core/box.hpp"
#include "tensorhub/core/checksum.hpp"
#include "tensorhub/core/error.hpp"

namespace tensorhub::cli {
namespace {

std::uint64_t mix(std::uint64_t version, std::uint64_t key, std::uint64_t i) {
  std::uint64_t x = (version * 0x9E3779B97F4A7C15ull) ^ (key * 0xD6E8FEB86659FD93ull) ^ i;
  x ^= x >> 31;
  x *= 0xBF58476D1CE4E5B9ull;
  return x ^ (x >> 29);
}

// Calls fn(global element index, element index in t) for every element of t, row by row.
template <class Fn>
void for_each_element(const TensorSpec& s, Fn&& fn) {
  const auto& shape = s.sliced() ? s.global_shape : s.shape;
  const std::vector<std::int64_t> zero(s.shape.size(), 0);
  const auto& offset = s.sliced() ? s.box_offset : zero;
  const std::size_t rank = s.shape.size();
  if (rank == 0) {
    fn(0, 0);
    return;
  }
  const std::uint64_t n = s.numel();
  if (n == 0) return;
  const auto cols = static_cast<std::uint64_t>(s.shape[rank - 1]);
  std::vector<std::int64_t> at(rank, 0);  // the row's coordinates in the box (last one 0)
  for (std::uint64_t row = 0, local = 0; local < n; ++row, local += cols) {
    std::uint64_t g = 0;
    for (std::size_t d = 0; d < rank; ++d)
      g = g * static_cast<std::uint64_t>(shape[d]) + static_cast<std::uint64_t>(offset[d] + at[d]);
    for (std::uint64_t c = 0; c < cols; ++c) fn(g + c, local + c);
    for (std::size_t d = rank - 1; d-- > 0;) {  // next row
      if (++at[d] < s.shape[d]) break;
      at[d] = 0;
    }
  }
}

struct Pattern {
  std::uint64_t version = 0, key = 0;
  std::uint64_t cached_index = ~0ull, cached = 0;
  std::uint16_t at(std::uint64_t g) {
    if (g / 4 != cached_index) {
      cached_index = g / 4;
      cached = mix(version, key, cached_index);
    }
    return static_cast<std::uint16_t>(cached >> (16 * (g % 4)));
  }
};

Pattern pattern_of(const TensorSpec& s, std::uint64_t version) {
  const std::string& g = s.sliced() ? s.global_name : s.name;
  if (s.dtype != DType::kBF16) throw UserError("the synthetic global pattern is bf16 only, not " + describe(s));
  return Pattern{version, checksum64(g.data(), g.size())};
}

std::int64_t parts_for(const Layout& l, int ranks) { return l.parts > 0 ? l.parts : ranks; }

}  // namespace

const char* const kLayoutHelp =
    "cut every tensor into boxes of a global tensor, as a trainer's tensor-parallel shards are: 'dim0' (column-"
    "parallel, FSDP) or 'dim1' (row-parallel), optionally ':PARTS' (default: one per rank of this command); box i "
    "goes to rank i % ranks; 'plain' (default) keeps whole tensors";

Layout parse_layout(const std::string& text) {
  if (text == "plain") return {};
  const auto bad = [&] {
    return UserError("--layout must be plain, dim0, dim1, dim0:PARTS or dim1:PARTS, not '" + text + "'");
  };
  if (text.size() < 4 || text.compare(0, 3, "dim") != 0 || (text[3] != '0' && text[3] != '1')) throw bad();
  Layout l;
  l.dim = text[3] - '0';
  if (text.size() == 4) return l;
  if (text[4] != ':' || text.size() == 5 || text.size() > 11) throw bad();
  std::int64_t parts = 0;
  for (std::size_t i = 5; i < text.size(); ++i) {
    if (text[i] < '0' || text[i] > '9') throw bad();
    parts = parts * 10 + (text[i] - '0');
  }
  if (parts < 1 || parts > 4096) throw UserError("--layout " + text + ": PARTS must be between 1 and 4096");
  l.parts = parts;
  return l;
}

std::vector<TensorSpec> publisher_layout(const std::vector<TensorSpec>& model, const Layout& layout, int rank,
                                         int ranks) {
  std::vector<TensorSpec> out;
  const std::int64_t parts = parts_for(layout, ranks);
  for (std::size_t t = 0; t < model.size(); ++t) {
    const auto& s = model[t];
    const auto dim = static_cast<std::size_t>(layout.dim);
    if (s.shape.size() <= dim) {
      if (static_cast<int>(t % static_cast<std::size_t>(ranks)) == rank) out.push_back(s);
      continue;
    }
    if (s.shape[dim] < parts) {
      throw UserError("--layout: tensor '" + s.name + "' " + describe(s) + " has fewer than " + std::to_string(parts) +
                      " elements along dim " + std::to_string(dim));
    }
    for (std::int64_t i = rank; i < parts; i += ranks) {
      const Box b = split(s.shape, dim, parts, i);
      TensorSpec box(s.name + ".part" + std::to_string(i), s.dtype, b.extent);
      box.global_name = s.name;
      box.global_shape = s.shape;
      box.box_offset = b.offset;
      out.push_back(std::move(box));
    }
  }
  return out;
}

std::vector<TensorSpec> reader_layout(const Manifest& m, const Layout& layout, int rank, int ranks) {
  std::vector<TensorSpec> globals;
  std::map<std::string, bool, std::less<>> seen;
  for (const auto& e : m.tensors) {
    const auto& s = e.spec;
    const std::string& g = s.sliced() ? s.global_name : s.name;
    if (!seen.emplace(g, true).second) continue;
    globals.emplace_back(g, s.dtype, s.sliced() ? s.global_shape : s.shape);
  }
  auto out = publisher_layout(globals, layout, rank, ranks);
  if (out.empty()) {
    throw UserError("--layout: reader rank " + std::to_string(rank) + " of " + std::to_string(ranks) +
                    " gets no box (the layout has " + std::to_string(parts_for(layout, ranks)) + " parts)");
  }
  return out;
}

bool global_pattern(const Manifest& m) {
  for (const auto& e : m.tensors) {
    if (e.spec.sliced()) return true;
  }
  return false;
}

void fill_global(const Tensor& t, std::uint64_t version) {
  auto p = pattern_of(t.spec, version);
  auto* out = static_cast<unsigned char*>(t.data);
  for_each_element(t.spec, [&](std::uint64_t g, std::uint64_t i) {
    const std::uint16_t v = p.at(g);
    std::memcpy(out + i * 2, &v, 2);
  });
}

bool matches_global(const Tensor& t, std::uint64_t version) {
  auto p = pattern_of(t.spec, version);
  const auto* in = static_cast<const unsigned char*>(t.data);
  bool ok = true;
  for_each_element(t.spec, [&](std::uint64_t g, std::uint64_t i) {
    std::uint16_t v = 0;
    std::memcpy(&v, in + i * 2, 2);
    ok = ok && v == p.at(g);
  });
  return ok;
}

}  // namespace tensorhub::cli
