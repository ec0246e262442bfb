// Which readers each holder serves right now: the slots behind the per-source reader limit K
// (planner.hpp). Pure bookkeeping, no locking (the Coordinator serialises access).
//
// A reader takes a slot at a holder with its first assigned read there and counts against the
// holder's limit while it has reads in flight. When its reads drain the slot stays taken
// (sticky) until the reader releases it (it finished its pull, left, or needs nothing more from
// that holder) or `grace` has passed since it went idle; grace 0 releases it at once. Without
// stickiness another reader takes a K=1 slot between two acquire calls of the first, the two
// alternate at the origin, and the relay chain breaks.
//
// Each slot remembers the reader's dc label, so the coordinator can count a holder's readers
// per DC: up to K of the holder's own DC, plus one seed per other DC.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "tensorhub/coord/types.hpp"

namespace tensorhub::coord {

class SourceSlots {
 public:
  using Clock = std::chrono::steady_clock;

  explicit SourceSlots(std::chrono::milliseconds grace) : grace_(grace) {}

  std::chrono::milliseconds grace() const { return grace_; }

  // `holder` has a slot (busy or sticky) for `reader`.
  bool serves(WorkerId holder, WorkerId reader) const;
  // Readers with a slot at `holder` whose dc label is `dc`.
  std::uint32_t readers_from(WorkerId holder, const std::string& dc) const;
  // Reads in flight from `holder` to `reader`.
  std::uint32_t reads(WorkerId holder, WorkerId reader) const;
  // Holders where `reader` keeps an idle (sticky) slot.
  std::vector<WorkerId> idle_slots_of(WorkerId reader) const;

  // One more read assigned; takes the slot if the reader had none.
  void add_read(WorkerId holder, WorkerId reader, const std::string& reader_dc);
  // One read done. Returns true if the slot is now idle; with grace 0 it is already released.
  bool end_read(WorkerId holder, WorkerId reader, Clock::time_point now);

  // Releases the slot if it is idle (no read in flight).
  void release_if_idle(WorkerId holder, WorkerId reader);
  // `worker` left: drops its slots as a reader and as a holder, busy ones included (a reader
  // that left never completes its reads, and must not keep a K slot or a DC's WAN slot).
  void forget_worker(WorkerId worker);
  // Releases idle slots that have been idle for at least the grace period.
  void expire(Clock::time_point now);

 private:
  struct Slot {
    std::string dc;           // the reader's dc label
    std::uint32_t reads = 0;  // assigned reads not completed yet
    Clock::time_point idle_since{};
  };
  void erase(std::map<WorkerId, std::map<WorkerId, Slot>>::iterator holder, WorkerId reader);

  std::chrono::milliseconds grace_;
  std::map<WorkerId, std::map<WorkerId, Slot>> by_holder_;  // holder -> reader -> slot
};

}  // namespace tensorhub::coord
