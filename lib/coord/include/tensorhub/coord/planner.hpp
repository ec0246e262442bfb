// Source selection: which holder serves which chunk to which reader. Pure logic, no I/O, no
// locking, unit-tested without a Coordinator (tests/unit/test_planner.cpp).
//
// The Coordinator owns pins, slots and the lifecycle; a Planner only decides. It gets a
// read-only view (PlanView: the version's holders, the workers and their labels, who is
// suspect, the source slots) and a request, and returns a decision (assignments, chunks to wait
// for, unavailable chunks, seed changes, slots to release) that the Coordinator applies.
// CoordinatorConfig::planner chooses the implementation; DefaultPlanner (default_planner.cpp)
// is the algorithm below.
//
// Distance: one definition, topo::distance_between on the workers' labels (labels_of):
// same process < same host < same rack < same datacenter < other DC. Empty dc/rack labels
// equal each other, so an unlabelled (single-DC) job never sees kOtherDc.
//
// DefaultPlanner, for one chunk: the holders that have it complete, may serve the reader
// (VersionState::may_serve), did not fail it and are not suspect; then
//   1. Local first: if any holder is in the reader's DC, holders in other DCs are dropped, even
//      when every local one is busy (the reader waits rather than crossing the WAN).
//   2. One WAN copy per datacenter (wan_seed.hpp): if only holders in other DCs have the chunk,
//      only the version's *seed* for the reader's DC reads it across the WAN. The seed is the
//      first relaying reader of that DC to ask for such a chunk; the others get no assignment
//      for it and are served by the seed (pipelined: as soon as it reports chunks held). A seed
//      that leaves, withdraws its relay reference or fails a read is replaced by the next
//      relaying reader that asks. A DC with no relaying reader reads across the WAN anyway.
//   3. choose_source below: the nearest distance class; among those a holder with a free slot;
//      the least loaded; a relaying reader before an origin (so the trainer's NIC is spent
//      once); the shallower relay depth; the lower id (deterministic).
// A chunk is unavailable when no holder has it at all, or every holder failed the reader and no
// peer of its DC will fetch it; a suspect holder may come back, so its chunks are waited for.
//
// Slots (source_slots.hpp): a holder serves at most K = max_readers_per_source readers of its
// own DC at once, plus at most one reader (the seed) per other DC, which never takes one of the
// K local slots. A holder already serving the reader does not count it twice. A reader keeps its
// slot for a short grace period after its reads drain (sticky), so that between two of its
// acquire calls nobody steals it and breaks the relay chain; it releases an idle slot at a
// holder that has nothing it still wants, and after a failed read there.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "tensorhub/coord/source_slots.hpp"
#include "tensorhub/coord/types.hpp"
#include "tensorhub/coord/version_state.hpp"
#include "tensorhub/topo/labels.hpp"

namespace tensorhub::coord {

using Distance = topo::Distance;
using WorkerDirectory = std::map<WorkerId, WorkerInfo>;

// The worker's labels as topo sees them; its transport endpoint is its process identity.
topo::Labels labels_of(const WorkerInfo& info);

// topo::distance_between(labels_of(a), labels_of(b)).
Distance distance_between(const WorkerInfo& a, const WorkerInfo& b);

struct Candidate {
  WorkerId holder = 0;
  Distance distance = Distance::kSameHost;
  // Readers occupying the slots this reader would take: for a holder in the reader's DC, the
  // readers of that DC it serves (limit K); across the WAN (`wan`), the readers of the asking
  // reader's DC it serves (limit 1).
  std::uint32_t active_readers = 0;
  bool serves_reader = false;  // already serving the reader that asks
  bool origin = false;         // a publisher rather than a relaying reader
  std::uint32_t depth = 0;     // relay depth: 0 = origin, 1 = read from an origin, ...
  bool wan = false;            // the holder is in another DC than the reader
};

// Index into `candidates` of the chosen source, or nullopt if every candidate is at its limit.
std::optional<std::size_t> choose_source(std::span<const Candidate> candidates, std::uint32_t max_readers_per_source);

// What a planner may look at: read-only.
struct PlanView {
  const VersionState& version;
  const WorkerDirectory& workers;  // registered workers (a holder not in it has gone)
  const SourceSlots& slots;
  std::function<bool(WorkerId)> suspect;        // no new reads go to a suspect worker (liveness.hpp)
  std::chrono::steady_clock::time_point now{};  // the coordinator's clock
  // Rails: a registered worker on this worker's host has a GPU of rail r of n
  // (WorkerRegistry::host_has_rail); empty: assume so.
  std::function<bool(const WorkerInfo&, std::uint32_t, std::uint32_t)> host_has_rail{};
};

struct AcquirePlanRequest {
  WorkerId reader = 0;                    // registered
  std::span<const std::uint32_t> chunks;  // in range, in wanted order
  std::uint32_t max_assign = 16;          // already capped
  std::uint32_t max_readers_per_source = 2;
};

struct AcquirePlan {
  struct Pick {
    std::uint32_t chunk = 0;
    WorkerId holder = 0;
  };
  std::vector<Pick> assignments;           // in the order asked for
  std::vector<std::uint32_t> waiting;      // held somewhere, not assigned now: ask again later
  std::vector<std::uint32_t> unavailable;  // the pull cannot get these
  std::optional<std::string> seed_dc;      // the reader now seeds this DC
  std::vector<WorkerId> release_slots;     // the reader's idle slots to release
};

class Planner {
 public:
  virtual ~Planner() = default;
  // Sources for `request.chunks`. The Coordinator pins every assignment and takes its slot,
  // records `waiting` as what the reader still wants, sets the seed and releases the slots.
  virtual AcquirePlan plan_acquire(const PlanView& view, const AcquirePlanRequest& request) const = 0;
  // After `reader`'s read from `holder` completed (`ok` or not) and left its slot idle: release
  // the slot now?
  virtual bool release_idle_slot(const PlanView& view, WorkerId reader, WorkerId holder, bool ok) const = 0;
  // A read of `reader` failed: does it lose its seed role? (The Coordinator then drops it.)
  virtual bool drop_seed_on_failure(const PlanView& view, WorkerId reader) const = 0;
};

// The algorithm described at the top of this file.
class DefaultPlanner final : public Planner {
 public:
  AcquirePlan plan_acquire(const PlanView& view, const AcquirePlanRequest& request) const override;
  bool release_idle_slot(const PlanView& view, WorkerId reader, WorkerId holder, bool ok) const override;
  bool drop_seed_on_failure(const PlanView& view, WorkerId reader) const override;
};

}  // namespace tensorhub::coord
