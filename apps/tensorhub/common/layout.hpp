// --layout of `publish` and `pull` (README "Resharding"): a synthetic model cut into boxes of
// global tensors, as a trainer's tensor-parallel shards are, and a reader's own boxes of it; and
// the synthetic pattern such versions carry, a function of each element's global coordinates, so
// that a reader can check a box that crosses any number of the publishers' boxes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tensorhub/core/manifest.hpp"
#include "tensorhub/core/tensor.hpp"

namespace tensorhub::cli {

struct Layout {
  int dim = -1;            // -1: plain (no boxes)
  std::int64_t parts = 0;  // boxes per tensor; 0: one per rank of the command
  bool sliced() const { return dim >= 0; }
};

// "plain", "dim0", "dim1", "dim0:8", "dim1:3". UserError otherwise.
Layout parse_layout(const std::string& text);
extern const char* const kLayoutHelp;

// Box i of the `parts` boxes of a tensor cut along `dim` belongs to rank i % ranks; a tensor
// with no dimension `dim` is held whole by rank t % ranks (t: its index in the model), as a
// replicated norm would be. The publisher's tensors: boxes named "<tensor>.part<i>" of global
// tensor "<tensor>" (sliced specs), and its whole tensors (plain specs).
std::vector<TensorSpec> publisher_layout(const std::vector<TensorSpec>& model, const Layout& layout, int rank,
                                         int ranks);

// The global tensors of `m` (sliced tensors by global name, plain ones as themselves, in the
// order first seen), and this reader's boxes of them by the same rule. Boxes are sliced specs
// named "<global>.part<i>"; a global tensor with no dimension `dim` is pulled whole (a plain spec
// named after it). UserError when this rank gets nothing (more ranks than parts).
std::vector<TensorSpec> reader_layout(const Manifest& m, const Layout& layout, int rank, int ranks);

// Whether `m` carries the global pattern (it has a sliced tensor: published with --layout).
bool global_pattern(const Manifest& m);

// The global pattern of `version` in a bf16 tensor (a box of a global tensor, or a whole one):
// element g of global tensor G (row-major) is a 16-bit slice of a hash of (version, G, g / 4).
void fill_global(const Tensor& t, std::uint64_t version);
// Whether every element of `t` carries it.
bool matches_global(const Tensor& t, std::uint64_t version);

}  // namespace tensorhub::cli
