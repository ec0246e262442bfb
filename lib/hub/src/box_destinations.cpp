#include "box_destinations.hpp"

#include "hub_context.hpp"
#include "tensorhub/core/box.hpp"
#include "tensorhub/core/error.hpp"
#include "tensorhub/transfer/box_runs.hpp"

namespace tensorhub {
namespace {

std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::string s = "[";
  for (std::size_t d = 0; d < shape.size(); ++d) s += (d > 0 ? "," : "") + std::to_string(shape[d]);
  return s + "]";
}

// The published box a tensor of the manifest holds (a plain tensor: all of itself).
Box held_box(const TensorSpec& s) {
  if (s.sliced()) return s.box();
  return Box{std::vector<std::int64_t>(s.shape.size(), 0), s.shape};
}

}  // namespace

std::optional<std::vector<transfer::Destination>> box_destinations(const Manifest& m, const Tensor& t) {
  const TensorSpec& want = t.spec;
  const bool sliced = want.sliced();
  if (!sliced && m.find(want.name)) return std::nullopt;
  const std::string& global = sliced ? want.global_name : want.name;
  const std::string what = vname(m.model, m.version);
  std::vector<std::uint32_t> sources;
  if (const auto plain = m.find(global); plain && !m.tensors[*plain].spec.sliced()) {
    sources.push_back(*plain);
  } else {
    for (std::uint32_t i = 0; i < m.tensors.size(); ++i) {
      if (m.tensors[i].spec.global_name == global) sources.push_back(i);
    }
  }
  if (sources.empty()) {
    if (!sliced) return std::nullopt;
    throw NotFoundError("pull: '" + want.name + "' is a box of global tensor '" + global + "', which " + what +
                        " does not have");
  }
  const TensorSpec& first = m.tensors[sources.front()].spec;
  const auto& global_shape = first.sliced() ? first.global_shape : first.shape;
  const std::string global_text = std::string(dtype_name(first.dtype)) + shape_text(global_shape);
  const std::string who = "pull: tensor '" + want.name + "'";
  if (want.dtype != first.dtype) {
    throw UserError(who + " is " + describe(want) + " but global tensor '" + global + "' of " + what + " is " +
                    global_text);
  }
  if (sliced && want.global_shape != global_shape) {
    throw UserError(who + " is a box of " + global + shape_text(want.global_shape) + " but " + what + " has " + global +
                    " as " + global_text);
  }
  if (!sliced && want.shape != global_shape) {
    throw UserError(who + ": destination is " + describe(want) + " but " + what + " has global tensor '" + global +
                    "' as " + global_text);
  }
  const Box box = sliced ? want.box() : Box{std::vector<std::int64_t>(global_shape.size(), 0), global_shape};
  if (box.offset.size() != global_shape.size() || box.extent.size() != global_shape.size() ||
      !inside(global_shape, box)) {
    throw UserError(who + ": box " + describe(box) + " does not lie inside " + global + shape_text(global_shape));
  }
  if (t.data == nullptr) throw UserError(who + " has a null buffer");
  if (t.bytes < want.bytes()) {
    throw UserError("pull: destination buffer for '" + want.name + "' holds " + std::to_string(t.bytes) + " bytes, " +
                    describe(want) + " needs " + std::to_string(want.bytes()));
  }
  std::vector<transfer::Destination> out;
  std::uint64_t covered = 0;
  for (const auto i : sources) {
    const auto& s = m.tensors[i].spec;
    auto runs = transfer::box_runs(held_box(s), box, dtype_size(s.dtype));
    if (runs.empty()) continue;
    covered += transfer::run_bytes(runs);
    const bool whole = runs.size() == 1 && runs.front() == transfer::Run{0, 0, s.bytes(), 1, 0, 0};
    if (whole && s.bytes() == want.bytes()) runs.clear();  // exactly this published tensor
    out.push_back(transfer::Destination{i, t.data, t.memory, std::move(runs)});
  }
  if (covered != want.bytes()) {
    throw UserError(who + ": the boxes of '" + global + "' in " + what + " cover " + std::to_string(covered) +
                    " of its " + std::to_string(want.bytes()) + " bytes");
  }
  return out;
}

}  // namespace tensorhub
