// Source selection: pure logic, no I/O, unit-tested without MPI.
//
// Distance: one definition, topo::distance_between on the workers' labels (labels_of):
// same process < same host < same rack < same datacenter < other DC. Empty dc/rack labels
// equal each other, so an unlabelled (single-DC) job never sees kOtherDc.
//
// For one chunk, the coordinator (coordinator_reads.cpp) gathers the holders that have it
// complete and may serve the reader, then:
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
//
// Slots (source_slots.hpp): a holder serves at most K = max_readers_per_source readers of its
// own DC at once, plus at most one reader (the seed) per other DC, which never takes one of the
// K local slots. A holder already serving the reader does not count it twice. A reader keeps its
// slot for a short grace period after its reads drain (sticky), so that between two of its
// acquire calls nobody steals it and breaks the relay chain.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "tensorhub/coord/types.hpp"
#include "tensorhub/topo/labels.hpp"

namespace tensorhub::coord {

using Distance = topo::Distance;

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

}  // namespace tensorhub::coord
