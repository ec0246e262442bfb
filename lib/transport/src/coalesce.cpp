#include "coalesce.hpp"

#include <algorithm>

namespace tensorhub::transport {

std::vector<Span> coalesce(std::span<const Span> ranges, std::uint64_t max_gap) {
  std::vector<Span> sorted(ranges.begin(), ranges.end());
  std::sort(sorted.begin(), sorted.end(), [](const Span& a, const Span& b) { return a.begin < b.begin; });
  std::vector<Span> out;
  for (const auto& r : sorted) {
    if (!out.empty() && r.begin <= out.back().end + max_gap) {
      out.back().end = std::max(out.back().end, r.end);
    } else {
      out.push_back(r);
    }
  }
  return out;
}

}  // namespace tensorhub::transport
