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
// Rails (Rails::n > 1, CoordinatorConfig::plan_rails: hosts of n GPUs, each GPU with its own
// NIC, e.g. 8 x 400 Gbit/s): stripe s enters a host through the GPU of rail s mod n (rail =
// WorkerInfo::gpu mod n), so every NIC of a host carries about 1/n of the version in and out,
// and the host's other GPUs get the stripe over NVLink. Then a member has K child slots on its
// own host and K off it (counted apart); a reader first takes a member on its host (1. above);
// a reader that is not the stripe's rail and finds none there waits for one, if a worker of
// that rail is registered on its host, for at most Rails::wait after its first plan call of the
// version (the host's GPUs start their pulls together), then plans it as above; among members
// off its host, those of the stripe's rail (and origins) come first. A reader or member whose
// gpu is unknown (-1) has no rail.
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

#include <chrono>
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

// Rails of a plan (PlanBook, rails above).
struct PlanRails {
  std::uint32_t n = 1;  // GPUs (NICs) per host; 1: no rails
  std::chrono::milliseconds wait{100};
};

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

  using Rails = PlanRails;

  // Plans `wanted` (in range, validated by the caller) for `reader` (registered). `k` >= 1. `k`
  // and `rails` are taken from the version's first call.
  Result plan(const PlanView& view, WorkerId reader, std::span<const ChunkRange> wanted,
              std::span<const WorkerId> exclude, std::uint32_t k, Rails rails = {});

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
    std::uint8_t off_rail = 0;  // 1: the member's rail is not the stripe's (rails only)
    std::uint8_t rank = 0;      // 0 eligible relay, 1 origin, 2 other relay
    std::uint32_t depth = 0;
    WorkerId id = 0;
    auto operator<=>(const Entry&) const = default;
  };
  struct Member {
    std::uint32_t loc[kLevels] = {0, 0, 0};
    bool origin = false;
    std::int32_t rail = -1;  // WorkerInfo::gpu mod Rails::n; -1: none
    std::uint32_t join = 0;
    std::vector<std::uint8_t> in;              // per stripe: a member of it
    std::vector<std::uint16_t> children;       // per stripe: planned children (local; rails: off its host)
    std::vector<std::uint16_t> host_children;  // rails: per stripe, planned children on its host
    std::vector<std::uint8_t> listed;          // per stripe: bit 0 in the host free set, bit 1 in rack and dc
    std::vector<std::uint8_t> wan_children;
    std::vector<std::uint32_t> depth;
    std::vector<Entry> entry;  // per stripe: its key in the free sets (while in them)
  };
  struct ReaderPlan {
    std::vector<WorkerId> parent;    // per stripe, 0: none
    std::vector<std::uint8_t> wan;   // per stripe: the parent is across the WAN
    std::vector<std::uint8_t> host;  // rails: per stripe, the parent is on the reader's host
    std::set<WorkerId> pinned;
    std::chrono::steady_clock::time_point first{};  // its first plan call (Rails::wait)
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
  Rails rails_;
  std::int32_t rail_of(const WorkerInfo& info) const;
  std::map<std::string, std::uint32_t> loc_ids_[kLevels];
  std::vector<std::vector<std::set<Entry>>> free_[kLevels];  // [level][loc][stripe]
  std::vector<std::vector<std::uint32_t>> dc_members_;       // [dc loc][stripe]: members
  std::vector<std::vector<WorkerId>> stripe_members_;        // [stripe]: members, joined order
  std::map<WorkerId, Member> members_;
  std::map<WorkerId, ReaderPlan> readers_;
  std::uint32_t joins_ = 0;
};

}  // namespace tensorhub::coord
