// Plan-based pulls (architecture.md section 3): one version's distribution plan. Pure data +
// logic, no locking (the Coordinator serialises access); each VersionState owns one.
//
// The version's chunks are cut into stripes: the chunk runs of its publisher shards (shards are
// contiguous in the manifest), each cut further so that a version has at least kMinStripes
// stripes. Per stripe, the book keeps a forest rooted at the holders that hold it (the origins,
// relays that finished) whose other members are relaying readers that were planned a parent for
// it and offered a relay region for every tensor of it: a *planned* member may not hold the
// stripe yet, its children follow its progress bytes. A reader's plan asks, per stripe, for a
// parent:
//   1. a member in the reader's datacenter with fewer than K planned children in that stripe
//      (K = CoordinatorConfig::plan_fanout, default 1, at most max_readers_per_source), nearest
//      distance class first (same host < rack < DC); among those: an *eligible* relay (a relay
//      whose join number is congruent to the stripe mod K, so every relay is an inner node in
//      about 1/K of the stripes and sends about one copy of the version; K = 1: every relay,
//      i.e. one chain per stripe in arrival order), then an origin, then any other relay (a
//      relay inner in another stripe class would send 1 + 1/K copies and pace every reader: the
//      origin's spare slot is cheaper, above all for a trainer group whose shards are small);
//      the shallower; the lower id.
//   2. a stripe with members in the reader's DC that are all full or suspect: waiting (local
//      first, the reader never crosses the WAN while its DC has the stripe planned).
//   3. none in its DC: the first reader of a DC reads the stripe across the WAN (it becomes the
//      DC's seed) from a member of another DC that has no WAN child in that stripe yet (one WAN
//      copy per DC and holder; a WAN child never takes one of the K local slots); the DC's
//      later readers are planned under it (1.).
//   4. holders that hold the whole stripe but are not members yet (origins, relays that pulled
//      chunk by chunk) join on the first miss (one scan of the holders).
// Members that failed the reader (failed pair), are excluded by its request, are suspect or
// withdrawn (for pulls that resolved after the withdrawal) are skipped; a member whose worker
// is gone is dropped. A reader re-planning a stripe keeps a parent that is still usable (no
// change, no recount); it never gets one of its own descendants (no cycles).
//
// Cost of one plan call: O(stripes x log members) plus the wanted ranges; the distance classes
// are set lookups by the reader's host, rack and dc (interned once per call), never per chunk.
// Pins: each distinct planned source is pinned once per reader (VersionState::pin_read) until
// release_source / release_reader (CompleteRequest::release_sources, finish, the reader gone).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "tensorhub/coord/types.hpp"
#include "tensorhub/core/limits.hpp"

namespace tensorhub::coord {

struct PlanView;

// Limits on plan messages from outside (beside tensorhub/core/limits.hpp's): chunk ranges in one
// plan request, reply or complete (at most one per chunk), and sources one request may exclude
// or release.
inline constexpr std::uint32_t kMaxPlanRanges = limits::kMaxChunksPerVersion;
inline constexpr std::uint32_t kMaxPlanExclude = 4096;

class PlanBook {
 public:
  static constexpr std::uint32_t kMinStripes = 16;

  struct Piece {
    ChunkRange range;
    WorkerId holder = 0;
  };
  struct Result {
    std::vector<Piece> steps;  // in the order asked for, runs merged
    std::vector<ChunkRange> waiting;
    std::vector<ChunkRange> unavailable;
    std::vector<WorkerId> new_pins;      // sources the caller pins now (once per reader)
    std::optional<std::string> seed_dc;  // the reader now seeds this DC (read across the WAN)
  };

  // Plans `wanted` (in range, validated by the caller) for `reader` (registered). `k` >= 1.
  Result plan(const PlanView& view, WorkerId reader, std::span<const ChunkRange> wanted,
              std::span<const WorkerId> exclude, std::uint32_t k);

  // `reader` holds a plan pin on `holder`.
  bool planned_pair(WorkerId reader, WorkerId holder) const;
  // Ends `reader`'s plan use of `holder` (its child slots there); true if it held a plan pin
  // (the caller unpins it once).
  bool release_source(WorkerId reader, WorkerId holder);
  // Ends all of `reader`'s plan uses; returns the holders it had pinned (the caller unpins).
  std::vector<WorkerId> release_reader(WorkerId reader);
  // `worker` is gone: its plan uses and its membership go; returns the holders it had pinned.
  std::vector<WorkerId> forget_worker(WorkerId worker);
  // `holder`'s reference is gone: it is no parent any more (its children re-plan).
  void forget_holder(WorkerId holder) { drop_member(holder); }

  // For tests and status: the stripes, and the planned parent of `reader` in stripe `s` (0: none).
  const std::vector<ChunkRange>& stripes() const { return stripes_; }
  WorkerId parent_of(WorkerId reader, std::size_t s) const;
  std::uint32_t children_of(WorkerId holder, std::size_t s) const;

 private:
  static constexpr int kLevels = 3;  // host, rack, dc
  struct Entry {
    std::uint8_t rank = 0;  // 0 eligible relay, 1 origin, 2 other relay
    std::uint32_t depth = 0;
    WorkerId id = 0;
    auto operator<=>(const Entry&) const = default;
  };
  struct Member {
    std::uint32_t loc[kLevels] = {0, 0, 0};
    bool origin = false;
    std::uint32_t join = 0;
    std::vector<std::uint8_t> in;         // per stripe: a member of it
    std::vector<std::uint16_t> children;  // per stripe: planned children (local)
    std::vector<std::uint8_t> wan_children;
    std::vector<std::uint32_t> depth;
    std::vector<Entry> entry;  // per stripe: its key in the free sets (while in them)
  };
  struct ReaderPlan {
    std::vector<WorkerId> parent;   // per stripe, 0: none
    std::vector<std::uint8_t> wan;  // per stripe: the parent is across the WAN
    std::set<WorkerId> pinned;
  };
  class Call;  // one plan call (plan_book_pick.cpp)

  void init(const PlanView& view);
  std::uint32_t intern(int level, const std::string& key);
  Member& add_member(const PlanView& view, WorkerId id, bool origin, std::uint32_t k);
  void join_stripe(Member& m, WorkerId id, std::size_t s, std::uint32_t depth, std::uint32_t k);
  void update_free(Member& m, WorkerId id, std::size_t s, std::uint32_t k);
  void drop_member(WorkerId id);
  void unlink(WorkerId reader, ReaderPlan& rp, std::size_t s);
  std::set<Entry>* free_set(int level, std::uint32_t loc, std::size_t s);

  std::vector<ChunkRange> stripes_;
  std::uint32_t k_ = 1;
  std::map<std::string, std::uint32_t> loc_ids_[kLevels];
  std::vector<std::vector<std::set<Entry>>> free_[kLevels];  // [level][loc][stripe]
  std::vector<std::vector<std::uint32_t>> dc_members_;       // [dc loc][stripe]: members
  std::vector<std::vector<WorkerId>> stripe_members_;        // [stripe]: members, joined order
  std::map<WorkerId, Member> members_;
  std::map<WorkerId, ReaderPlan> readers_;
  std::uint32_t joins_ = 0;
};

}  // namespace tensorhub::coord
