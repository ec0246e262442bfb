#include "tensorhub/coord/planner.hpp"

#include <tuple>

namespace tensorhub::coord {

topo::Labels labels_of(const WorkerInfo& info) {
  topo::Labels l;
  l.dc = info.dc;
  l.rack = info.rack;
  l.host = info.host;
  l.numa = info.numa;
  l.gpu = info.gpu;
  l.process = info.endpoint;
  return l;
}

Distance distance_between(const WorkerInfo& a, const WorkerInfo& b) {
  return topo::distance_between(labels_of(a), labels_of(b));
}

std::optional<std::size_t> choose_source(std::span<const Candidate> candidates, std::uint32_t max_readers_per_source) {
  std::optional<std::size_t> best;
  auto key = [](const Candidate& c) {
    return std::make_tuple(static_cast<int>(c.distance), c.serves_reader ? 0u : c.active_readers + 1, c.origin, c.depth,
                           c.holder);
  };
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    const auto& c = candidates[i];
    const std::uint32_t limit = c.wan ? 1 : max_readers_per_source;
    if (!c.serves_reader && c.active_readers >= limit) continue;
    if (!best || key(c) < key(candidates[*best])) best = i;
  }
  return best;
}

}  // namespace tensorhub::coord
