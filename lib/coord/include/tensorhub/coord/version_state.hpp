// One version's entry in the coordinator's directory, and its lifecycle:
//
//   pending  --(all shards of the publishing group registered)-->  committed (visible)
//   committed: readable while every chunk has a holder that is not withdrawn, or while a
//              snapshot file backs it (attach_snapshot)
//   a holder: active --unpublish--> withdrawn --(pins drained)--> gone
//             (or active --unpublish--> withdrawal deferred --(newer version commits)--> withdrawn)
//   the version is dropped when its last holder is gone, unless it is retained (then its last
//   holder must offload it to a snapshot before leaving) or a reading group still pins it
//   cold start: attach_snapshot of an unknown version creates it committed, with no holder
//
// A class whose invariants hold: every holder has one `have` entry per manifest chunk and one
// region slot per manifest tensor; a holder's pins equal the sum of its pinned_by; holders are
// only changed through the operations below (everything outside sees them const). Pure data +
// logic, no locking; the Coordinator serialises access.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "tensorhub/coord/plan_book.hpp"
#include "tensorhub/coord/types.hpp"

namespace tensorhub::coord {

// One reference to the version: a publisher (origin) or a relaying reader. Read-only outside
// VersionState.
struct Holder {
  WorkerId worker = 0;
  bool origin = false;     // publisher of a shard (not a relaying reader)
  bool withdrawn = false;  // unpublished: no new reads, waiting for pins to drain
  // Unpublished, but the withdrawal waits for a newer pending version of the model (deferred
  // withdrawal, coordinator.hpp): it still serves new reads and counts one outstanding read.
  bool withdraw_deferred = false;
  std::uint32_t depth = 0;                      // 0 origin, n = read from a depth n-1 holder
  std::vector<std::string> regions;             // per manifest tensor; empty = not held
  std::string progress;                         // relay's progress bytes (RelayOffer::progress)
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
  // A committed version with no holder, from a snapshot's manifest (cold start), retained once.
  VersionState(Manifest manifest, std::string snapshot);

  // ---- publishing
  // Registers one shard; throws UserError if it does not fit (duplicate, size mismatch...).
  // Returns true when this completed the group and the version is now committed.
  // A shard of a committed version is accepted again when it is exactly what the manifest says
  // (same tensors, shapes, checksums, chunk size, group size) from a worker that holds nothing
  // of it: an origin re-registering after its lease lapsed (or after a coordinator takeover)
  // becomes an origin holder again, even while relays keep the version readable. Returns false
  // then (nothing new committed).
  bool add_shard(const PublishRequest& request);
  // True if `worker` has a pending (uncommitted) shard; removes it.
  bool drop_pending(WorkerId worker);
  // The re-publish case of add_shard: true if `request` was taken as a returning origin.
  bool rejoin_origin(const PublishRequest& request);
  bool has_pending() const { return !pending_.empty(); }
  bool committed() const { return committed_; }
  bool readable() const;
  const Manifest& manifest() const { return *manifest_; }
  // The same, shared (ResolveReply hands it out without a copy; it never changes once committed).
  const std::shared_ptr<const Manifest>& shared_manifest() const { return manifest_; }
  std::uint64_t version() const { return version_; }

  // ---- holders
  const std::map<WorkerId, Holder>& holders() const { return holders_; }
  const Holder* find_holder(WorkerId worker) const;
  // The holders that are withdrawn (draining or drained): O(withdrawn), not O(holders), for the
  // coordinator's drain checks after every read.
  const std::set<WorkerId>& withdrawn_holders() const { return withdrawn_ids_; }
  // A holder other than `except` that is not withdrawn has chunk `c` (O(1): a count per chunk).
  bool chunk_available(std::uint32_t c, WorkerId except = 0) const;
  // `worker` is the only non-withdrawn holder of some chunk.
  bool sole_holder_of_some_chunk(WorkerId worker) const;
  // A new relay reference of `reader` (replacing a drained withdrawn one). One region slot per
  // manifest tensor (UserError otherwise).
  void add_relay(WorkerId reader, std::vector<std::string> regions, std::string progress = {});
  // An active relay offers more buffers: tensors it had not offered get the new regions; an
  // offered one keeps its region and its chunks. A non-empty `progress` replaces the old one.
  void merge_relay(WorkerId reader, const std::vector<std::string>& regions, const std::string& progress = {});
  // The relay `reader` verified chunk `c` (UserError if it has no relay reference or `c` is out
  // of range).
  void mark_held(WorkerId reader, std::uint32_t c);
  // The same for the run `r` (plan-based pulls: CompleteRequest::held_ranges), one fill.
  void mark_held_range(WorkerId reader, ChunkRange r);
  // `reader` (if it holds a reference) reads from a holder of relay depth `source_depth`.
  void note_source_depth(WorkerId reader, std::uint32_t source_depth);
  // No new reads go to `worker`; pulls resolved before `ticket` may still use it.
  void withdraw(WorkerId worker, std::uint64_t ticket);
  void defer_withdrawal(WorkerId worker);
  void erase_holder(WorkerId worker);

  // ---- reads and pulls
  void pin_read(WorkerId holder, WorkerId reader);
  // Releases one read of `reader` from `holder`; false if there is none.
  bool unpin_read(WorkerId holder, WorkerId reader);
  // The pulls of `reader` that resolved this version, by resolution ticket (Coordinator::ticket_).
  void start_pull(WorkerId reader, std::uint64_t ticket);
  // `reader` is done with its pull: its ticket, what it still wanted and its plan pins go.
  void end_pull(WorkerId reader);
  // Plan-based pulls (plan_book.hpp): the version's plan. Pins it hands out go through
  // pin_read / unpin_read like assigned reads.
  PlanBook& plans() { return plans_; }
  const PlanBook& plans() const { return plans_; }
  // Ends `reader`'s plan use of `holder` and unpins it; false if it had none.
  bool release_plan_source(WorkerId reader, WorkerId holder);
  // May `reader` read from `h`? Active holders always; a withdrawn holder (origin or relay) only
  // for pulls that resolved this version before it was withdrawn (its drain waits for those:
  // Coordinator::outstanding).
  bool may_serve(const Holder& h, WorkerId reader) const;
  // Pulls of other readers that resolved this version before `h` was withdrawn and still run.
  std::uint32_t pulls_before_withdrawal(const Holder& h) const;
  // Per reader, the chunks it asked for in its last acquire and was not assigned: while a holder
  // has one of them, the reader keeps its slot there after its reads drain (source_slots.hpp).
  void set_still_wanted(WorkerId reader, std::vector<std::uint32_t> chunks);
  const std::vector<std::uint32_t>& still_wanted(WorkerId reader) const;
  // `h` has one of `chunks`, or is an active relay that will have it (it offered its tensor).
  bool has_or_relays_any(const Holder& h, std::span<const std::uint32_t> chunks) const;
  // (reader, holder) pairs whose reads failed: that holder is not assigned to that reader again.
  void add_failed_pair(WorkerId reader, WorkerId holder) { failed_pairs_.insert({reader, holder}); }
  bool failed(WorkerId reader, WorkerId holder) const { return failed_pairs_.count({reader, holder}) > 0; }

  // ---- WAN seeds (wan_seed.hpp): dc label -> the reader that seeds it. Entries whose reader
  // left or withdrew are stale.
  const std::map<std::string, WorkerId>& wan_seeds() const { return wan_seeds_; }
  void set_seed(const std::string& dc, WorkerId reader) { wan_seeds_[dc] = reader; }
  // `reader` seeds no DC any more.
  void drop_seed(WorkerId reader);

  // ---- what keeps the version
  // Reading-group members that resolved it and are not done (64 bits: cannot wrap).
  std::uint64_t group_pins() const { return group_pins_; }
  void pin_group(std::uint32_t members) { group_pins_ += members; }
  void unpin_group();
  std::uint32_t retained() const { return retained_; }
  void retain() { ++retained_; }
  void release();  // UserError if not retained
  const std::string& snapshot() const { return snapshot_; }
  // The version is backed by the file at `path`; ends the offload lease.
  void attach_snapshot(std::string path);
  WorkerId offload_lease() const { return offload_lease_; }  // worker writing the snapshot, 0 if none
  void set_offload_lease(WorkerId worker) { offload_lease_ = worker; }

  // `id` went: its pending shard, the pins of its reads, its pull, seeds, failed pairs and offload
  // lease go; its reference is withdrawn at `ticket` (keep_reference) or erased.
  struct Forgotten {
    bool pending = false;
    bool reference = false;
    std::uint32_t pins = 0;
  };
  Forgotten forget_worker(WorkerId id, bool keep_reference, std::uint64_t ticket);
  // Pins of `reader`'s reads on this version's holders (assigned reads and plan sources).
  std::uint32_t pins_of(WorkerId reader) const;

  // Host and rank of each holder are left for the Coordinator (it knows the workers).
  VersionStatus status() const;

 private:
  void commit();
  Holder& holder_or_throw(WorkerId worker, const char* what);

  std::string model_;
  std::uint64_t version_;
  std::string group_;
  std::uint32_t group_size_;
  std::uint64_t chunk_bytes_;
  bool committed_ = false;
  std::map<std::uint32_t, PendingShard> pending_;
  std::shared_ptr<const Manifest> manifest_ = std::make_shared<const Manifest>();
  std::map<WorkerId, Holder> holders_;
  std::set<WorkerId> withdrawn_ids_;  // holders_ entries with `withdrawn` set
  std::set<std::pair<WorkerId, WorkerId>> failed_pairs_;
  std::map<std::string, WorkerId> wan_seeds_;
  std::map<WorkerId, std::vector<std::uint32_t>> still_wanted_;
  std::map<WorkerId, std::uint64_t> reader_tickets_;
  std::uint64_t group_pins_ = 0;
  std::uint32_t retained_ = 0;
  std::string snapshot_;
  WorkerId offload_lease_ = 0;
  PlanBook plans_;
  // Per chunk: holders that have it and are not withdrawn; chunks at 0 (so `readable` is O(1),
  // not O(chunks x holders) per resolve). Kept by count_holder / gain at every change of a
  // holder's `have` or `withdrawn` and at every holder added or erased.
  std::vector<std::uint32_t> live_;
  std::uint32_t missing_ = 0;
  void count_holder(const Holder& h, bool add);
  void gain(const Holder& h, std::uint32_t c);
};

}  // namespace tensorhub::coord
