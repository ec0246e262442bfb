#include "tensorhub/coord/planner.hpp"

#include <tuple>

namespace tensorhub::coord {

Distance distance_between(const WorkerInfo& a, const WorkerInfo& b) {
  if (a.dc != b.dc) return Distance::kOtherDc;
  if (a.rack != b.rack) return Distance::kSameDc;
  if (a.host != b.host) return Distance::kSameRack;
  if (a.endpoint != b.endpoint) return Distance::kSameHost;
  return Distance::kSameProcess;
}

std::optional<std::size_t> choose_source(std::span<const Candidate> candidates, std::uint32_t max_readers_per_source) {
  std::optional<std::size_t> best;
  auto key = [](const Candidate& c) {
    return std::make_tuple(static_cast<int>(c.distance), c.serves_reader ? 0u : c.active_readers + 1, c.origin, c.depth,
                           c.holder);
  };
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    const auto& c = candidates[i];
    if (!c.serves_reader && c.active_readers >= max_readers_per_source) continue;
    if (!best || key(c) < key(candidates[*best])) best = i;
  }
  return best;
}

}  // namespace tensorhub::coord
