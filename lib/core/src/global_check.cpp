#include <map>
#include <set>
#include <string>
#include <vector>

#include "manifest_detail.hpp"
#include "tensorhub/core/box.hpp"
#include "tensorhub/core/error.hpp"
#include "tensorhub/core/limits.hpp"

namespace tensorhub::detail {

void check_global_tensors(const std::vector<TensorEntry>& tensors) {
  struct Global {
    const TensorSpec* first = nullptr;
    std::vector<Box> boxes;
    std::vector<std::string> owners;
  };
  std::map<std::string, Global> globals;
  std::set<std::string> plain;
  for (const auto& e : tensors) {
    const TensorSpec& s = e.spec;
    if (!s.sliced()) {
      plain.insert(s.name);
      continue;
    }
    Global& g = globals[s.global_name];
    if (g.first == nullptr) {
      g.first = &s;
    } else if (s.dtype != g.first->dtype || s.global_shape != g.first->global_shape) {
      throw UserError("global tensor '" + s.global_name + "': '" + s.name + "' " + describe(s) + " and '" +
                      g.first->name + "' " + describe(*g.first) + " disagree on its dtype or shape");
    }
    if (g.boxes.size() == limits::kMaxBoxesPerGlobalTensor) {
      throw UserError("global tensor '" + s.global_name + "' has more than " +
                      std::to_string(limits::kMaxBoxesPerGlobalTensor) + " boxes");
    }
    g.boxes.push_back(s.box());
    g.owners.push_back(s.name);
  }
  for (const auto& [name, g] : globals) {
    if (plain.count(name) != 0) {
      throw UserError("'" + name + "' names both a plain tensor and a global tensor of the same version");
    }
    check_tiling(name, g.first->global_shape, g.boxes, g.owners);
  }
}

}  // namespace tensorhub::detail
