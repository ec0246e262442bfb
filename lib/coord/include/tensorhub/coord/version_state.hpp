// One version's entry in the coordinator's directory, and its lifecycle:
//
//   pending  --(all shards of the publishing group registered)-->  committed (visible)
//   committed: readable while every chunk has a holder that is not withdrawn, or while a
//              snapshot file backs it (attach_snapshot)
//   a holder: active --unpublish--> withdrawn --(pins drained)--> gone
//   the version is dropped when its last holder is gone, unless it is retained (then its last
//   holder must offload it to a snapshot before leaving) or a reading group still pins it
//   cold start: attach_snapshot of an unknown version creates it committed, with no holder
//
// Pure data + logic; the Coordinator serialises access.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "tensorhub/coord/types.hpp"

namespace tensorhub::coord {

struct Holder {
  WorkerId worker = 0;
  bool origin = false;     // publisher of a shard (not a relaying reader)
  bool withdrawn = false;  // unpublished: no new reads, waiting for pins to drain
  // Unpublished, but the withdrawal waits for a newer pending version of the model (deferred
  // withdrawal, coordinator.hpp): it still serves new reads and counts one outstanding read.
  bool withdraw_deferred = false;
  std::uint32_t depth = 0;                      // 0 origin, n = read from a depth n-1 holder
  std::vector<std::string> regions;             // per manifest tensor; empty = not held
  std::vector<std::uint8_t> have;               // per manifest chunk
  std::uint32_t pins = 0;                       // reads in flight from this holder
  std::map<WorkerId, std::uint32_t> pinned_by;  // the same, per reader (a dead reader's go)
  std::uint64_t withdrawn_ticket = 0;           // reads resolved before this ticket may still use it
  std::uint64_t chunks_held = 0;
};

struct PendingShard {
  WorkerId worker = 0;
  ShardManifest shard;
  std::vector<std::string> regions;
};

class VersionState {
 public:
  VersionState(std::string model, std::uint64_t version, std::string group, std::uint32_t group_size,
               std::uint64_t chunk_bytes);
  // A committed version with no holder, from a snapshot's manifest (cold start).
  explicit VersionState(Manifest manifest);

  // Registers one shard; throws UserError if it does not fit (duplicate, size mismatch...).
  // Returns true when this completed the group and the version is now committed.
  bool add_shard(const PublishRequest& request);

  bool committed() const { return committed_; }
  bool readable() const;
  const Manifest& manifest() const { return manifest_; }
  std::uint64_t version() const { return version_; }

  std::map<WorkerId, Holder>& holders() { return holders_; }
  const std::map<WorkerId, Holder>& holders() const { return holders_; }
  Holder* find_holder(WorkerId worker);
  // True if `worker` has a pending (uncommitted) shard; removes it.
  bool drop_pending(WorkerId worker);
  bool has_pending() const { return !pending_.empty(); }

  // A holder other than `except` that is not withdrawn has chunk `c`.
  bool chunk_available(std::uint32_t c, WorkerId except = 0) const;
  // `worker` is the only non-withdrawn holder of some chunk.
  bool sole_holder_of_some_chunk(WorkerId worker) const;

  // (reader, holder) pairs whose reads failed: that holder is not assigned to that reader again.
  std::set<std::pair<WorkerId, WorkerId>> failed_pairs;
  // The seed of each datacenter (dc label -> reader): the one reader there that reads chunks
  // across the WAN (wan_seed.hpp). Entries whose reader left or withdrew are stale.
  std::map<std::string, WorkerId> wan_seeds;
  // Per reader, the chunks it asked for in its last acquire and was not assigned: while a holder
  // has one of them, the reader keeps its slot there after its reads drain (source_slots.hpp).
  std::map<WorkerId, std::vector<std::uint32_t>> still_wanted;
  // `h` has one of the chunks `reader` still wants, or relays one (it will have it).
  bool wanted_from(const Holder& h, WorkerId reader) const;
  // Resolution ticket of each reader currently pulling this version (see Coordinator::ticket_).
  std::map<WorkerId, std::uint64_t> reader_tickets;
  // May `reader` read from `h`? Active holders always; a withdrawn holder (origin or relay) only
  // for pulls that resolved this version before it was withdrawn (its drain waits for those:
  // Coordinator::outstanding).
  bool may_serve(const Holder& h, WorkerId reader) const;
  // Pulls of other readers that resolved this version before `h` was withdrawn and are still
  // running (they may still be assigned to `h`).
  std::uint32_t pulls_before_withdrawal(const Holder& h) const;
  // Reading-group members that resolved this version and are not done (64 bits: cannot wrap).
  std::uint64_t group_pins = 0;
  std::uint32_t retained = 0;  // retain() count
  std::string snapshot;        // file backing this version (attach_snapshot), empty if none
  WorkerId offload_lease = 0;  // worker writing the snapshot (coordinator.hpp), 0 if none

  // Host and rank of each holder are left for the Coordinator (it knows the workers).
  VersionStatus status() const;

 private:
  void commit();

  std::string model_;
  std::uint64_t version_;
  std::string group_;
  std::uint32_t group_size_;
  std::uint64_t chunk_bytes_;
  bool committed_ = false;
  std::map<std::uint32_t, PendingShard> pending_;
  Manifest manifest_;
  std::map<WorkerId, Holder> holders_;
};

}  // namespace tensorhub::coord
