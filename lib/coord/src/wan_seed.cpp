#include "wan_seed.hpp"

namespace tensorhub::coord {
namespace {

// `h` is a live relaying reader that will hold chunk `c` (it offered a buffer for its tensor).
bool relays(const VersionState& v, const Holder& h, std::uint32_t c) {
  return !h.origin && !h.withdrawn && !h.regions[v.manifest().chunks[c].tensor].empty();
}

bool relays(const VersionState& v, WorkerId w, std::uint32_t c) {
  const auto h = v.holders().find(w);
  return h != v.holders().end() && relays(v, h->second, c);
}

bool live(const VersionState& v, const WorkerDirectory& workers, WorkerId w) {
  if (workers.count(w) == 0) return false;
  const auto h = v.holders().find(w);
  return h != v.holders().end() && !h->second.origin && !h->second.withdrawn;
}

// Some registered holder other than `reader` that may serve it and has not failed it has `c`.
bool can_fetch(const VersionState& v, const WorkerDirectory& workers, WorkerId reader, std::uint32_t c) {
  for (const auto& [id, h] : v.holders()) {
    if (id != reader && h.have[c] && v.may_serve(h, reader) && workers.count(id) > 0 && !v.failed(reader, id)) {
      return true;
    }
  }
  return false;
}

}  // namespace

WorkerId live_seed(const VersionState& v, const WorkerDirectory& workers, const std::string& dc) {
  const auto s = v.wan_seeds().find(dc);
  return s != v.wan_seeds().end() && live(v, workers, s->second) ? s->second : 0;
}

std::vector<WanSeed> live_seeds(const VersionState& v, const WorkerDirectory& workers) {
  std::vector<WanSeed> out;
  for (const auto& [dc, w] : v.wan_seeds()) {
    if (live(v, workers, w)) out.push_back(WanSeed{dc, w});
  }
  return out;
}

WanRead may_read_across_wan(const VersionState& v, const WorkerDirectory& workers, WorkerId reader, std::uint32_t c) {
  const std::string& dc = workers.at(reader).dc;
  const WorkerId seed = live_seed(v, workers, dc);
  if (seed == reader) return WanRead::kYes;
  // The seed brings `c` into this DC. (If it has `c` already and we still ask, its copy failed us.)
  if (seed != 0 && relays(v, seed, c) && !v.holders().at(seed).have[c]) return WanRead::kNo;
  if (relays(v, reader, c)) {
    // The first relaying reader to ask seeds its DC.
    return seed == 0 ? WanRead::kAsSeed : WanRead::kYes;
  }
  // `reader` would keep its copy to itself: wait if a relaying reader of this DC will fetch `c`.
  return dc_peer_will_fetch(v, workers, reader, c) ? WanRead::kNo : WanRead::kYes;
}

bool dc_peer_will_fetch(const VersionState& v, const WorkerDirectory& workers, WorkerId reader, std::uint32_t c) {
  const std::string& dc = workers.at(reader).dc;
  for (const auto& [id, h] : v.holders()) {
    if (id == reader || h.have[c] || !relays(v, h, c)) continue;
    const auto w = workers.find(id);
    if (w != workers.end() && w->second.dc == dc && can_fetch(v, workers, id, c)) return true;
  }
  return false;
}

}  // namespace tensorhub::coord
