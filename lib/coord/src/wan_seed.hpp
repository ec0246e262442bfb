// One WAN copy per datacenter (planner.hpp): which reader of a DC may read a chunk from a holder
// in another DC. Pure, read-only logic over one VersionState and the worker directory, used by
// DefaultPlanner (which returns seed changes for the Coordinator to apply).
//
// The seed of (version, DC) is the first reader of that DC that asks for a chunk only other DCs
// hold, and that relays the chunk (it offered its buffer for the chunk's tensor, so the rest of
// its DC can read the chunk from it). Every other reader of the DC waits for such chunks and is
// then served by the seed. A seed is live while it is registered and its relay reference is not
// withdrawn; a failed read ends its term (Planner::drop_seed_on_failure). The next relaying reader that asks then
// becomes the seed.
//
// Fallbacks, so that nobody waits for a copy that never comes:
//   * a reader that does not relay the chunk waits only if a relaying reader of its DC will
//     fetch it; in a DC without one it reads across the WAN itself;
//   * a chunk of a tensor the seed does not pull (partial pulls) is read across the WAN by any
//     relaying reader of it. Either way a holder serves one reader per other DC at a time.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "tensorhub/coord/planner.hpp"
#include "tensorhub/coord/types.hpp"
#include "tensorhub/coord/version_state.hpp"

namespace tensorhub::coord {

// The live seed of `dc` for `v`, or 0.
WorkerId live_seed(const VersionState& v, const WorkerDirectory& workers, const std::string& dc);

// Every live seed of `v`, by dc (VersionStatus::wan_seeds).
std::vector<WanSeed> live_seeds(const VersionState& v, const WorkerDirectory& workers);

enum class WanRead : std::uint8_t {
  kNo,      // wait: another reader of its DC brings the chunk over
  kYes,     // read across the WAN
  kAsSeed,  // read across the WAN, and become the DC's seed
};

// May `reader` (registered) read chunk `c` of `v` across the WAN? Asked only when no holder in
// its own DC can serve `c` and one in another DC can.
WanRead may_read_across_wan(const VersionState& v, const WorkerDirectory& workers, WorkerId reader, std::uint32_t c);

// Another live relaying reader of `reader`'s DC does not hold chunk `c` yet but can fetch it from
// a holder that has not failed it: `reader` may wait for it rather than cross the WAN itself, or
// rather than give up on `c` when every holder of `c` failed `reader`.
bool dc_peer_will_fetch(const VersionState& v, const WorkerDirectory& workers, WorkerId reader, std::uint32_t c);

}  // namespace tensorhub::coord
