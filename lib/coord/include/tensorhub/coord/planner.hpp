// Source selection: pure logic, no I/O, unit-tested without MPI.
//
// For one chunk, given the holders that have it complete and may serve it, pick one:
//   1. the nearest distance class (same process < host < rack < datacenter < other DC);
//   2. among those, a holder still under its concurrent-reader limit (a holder already
//      serving this reader does not count the reader twice);
//   3. the least loaded (fewest readers being served);
//   4. a relaying reader before an origin publisher, so the trainer's NIC is spent once;
//   5. the shallower relay depth, then the lower id (deterministic).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "tensorhub/coord/types.hpp"

namespace tensorhub::coord {

enum class Distance : std::uint8_t { kSameProcess = 0, kSameHost = 1, kSameRack = 2, kSameDc = 3, kOtherDc = 4 };

// Distance between two workers from their labels (empty rack/dc labels match each other).
Distance distance_between(const WorkerInfo& a, const WorkerInfo& b);

struct Candidate {
  WorkerId holder = 0;
  Distance distance = Distance::kSameHost;
  std::uint32_t active_readers = 0;  // distinct readers this holder serves right now
  bool serves_reader = false;        // already serving the reader that asks
  bool origin = false;               // a publisher rather than a relaying reader
  std::uint32_t depth = 0;           // relay depth: 0 = origin, 1 = read from an origin, ...
};

// Index into `candidates` of the chosen source, or nullopt if every candidate is at its limit.
std::optional<std::size_t> choose_source(std::span<const Candidate> candidates, std::uint32_t max_readers_per_source);

}  // namespace tensorhub::coord
