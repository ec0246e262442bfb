// DefaultPlanner: local first, one WAN copy per DC, K readers per source (rules: planner.hpp).
#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "tensorhub/coord/planner.hpp"
#include "wan_seed.hpp"

namespace tensorhub::coord {
namespace {

// One call's working state: distances computed once per holder, and the slots this call's
// assignments take (the Coordinator takes them after the call).
class AcquirePlanning {
 public:
  AcquirePlanning(const PlanView& view, const AcquirePlanRequest& request)
      : view_(view), request_(request), me_(view.workers.at(request.reader)) {}

  AcquirePlan run() {
    AcquirePlan plan;
    std::vector<Candidate> cands;
    for (const auto c : request_.chunks) {
      if (plan.assignments.size() >= request_.max_assign) {
        plan.waiting.push_back(c);
        continue;
      }
      if (!candidates_for(c, cands)) {
        plan.unavailable.push_back(c);
        continue;
      }
      const auto pick = choose_source(cands, request_.max_readers_per_source);
      if (!pick) {
        plan.waiting.push_back(c);  // every holder busy (or another reader seeds it): ask again later
        continue;
      }
      const WorkerId holder = cands[*pick].holder;
      plan.assignments.push_back(AcquirePlan::Pick{c, holder});
      if (!view_.slots.serves(holder, request_.reader)) newly_served_.insert(holder);
      busy_.insert(holder);
    }
    if (became_seed_) plan.seed_dc = me_.dc;
    // Idle slots at holders that have nothing the reader still wants go.
    for (const auto holder : view_.slots.idle_slots_of(request_.reader)) {
      if (busy_.count(holder)) continue;
      const auto* h = view_.version.find_holder(holder);
      if (h == nullptr || !view_.version.has_or_relays_any(*h, plan.waiting)) plan.release_slots.push_back(holder);
    }
    return plan;
  }

 private:
  Distance distance_to(WorkerId holder, const WorkerInfo& info) {
    const auto d = distance_.find(holder);
    if (d != distance_.end()) return d->second;
    return distance_.emplace(holder, distance_between(me_, info)).first->second;
  }

  // The holders that may serve chunk `c` now (local first, WAN seed rules). False if `c` is
  // unavailable to the reader.
  bool candidates_for(std::uint32_t c, std::vector<Candidate>& cands) {
    const auto& v = view_.version;
    const WorkerId reader = request_.reader;
    cands.clear();
    bool any_holder = false;
    bool any_failed = false;
    bool any_suspect = false;
    bool any_local = false;
    for (const auto& [id, h] : v.holders()) {
      if (id == reader || !h.have[c] || !v.may_serve(h, reader)) continue;
      const auto wit = view_.workers.find(id);
      if (wit == view_.workers.end()) continue;
      if (v.failed(reader, id)) {  // this holder already failed this reader
        any_failed = true;
        continue;
      }
      if (view_.suspect && view_.suspect(id)) {
        // Silent, or it failed another reader since it was last heard from: no new reads until it
        // proves alive or is declared dead (liveness.hpp). Until then the chunk is not lost.
        any_suspect = true;
        continue;
      }
      any_holder = true;
      const auto distance = distance_to(id, wit->second);
      const bool wan = distance == Distance::kOtherDc;
      any_local |= !wan;
      // Same DC: the holder's readers from its (and our) DC, limit K. Across the WAN: the readers
      // from our DC, limit 1 (the seed), which never take one of the holder's K local slots.
      const bool fresh = newly_served_.count(id) > 0;
      const auto active = view_.slots.readers_from(id, me_.dc) + (fresh ? 1 : 0);
      const bool serves = fresh || view_.slots.serves(id, reader);
      cands.push_back(Candidate{id, distance, active, serves, h.origin, h.depth, wan});
    }
    if (any_local) {
      // Local first: a peer in our DC serves us, even if we have to wait for it.
      std::erase_if(cands, [](const Candidate& x) { return x.wan; });
    } else if (!cands.empty() && !may_cross_wan(c)) {
      cands.clear();  // another reader of our DC brings this chunk over: wait for it
    }
    // Every holder of `c` failed this reader: wait for a peer of its DC that will hold `c` (e.g.
    // the seed that replaced it), else `c` is unavailable to it. A suspect holder may come back.
    return any_holder || any_suspect || (any_failed && dc_peer_will_fetch(v, view_.workers, reader, c));
  }

  bool may_cross_wan(std::uint32_t c) {
    if (became_seed_) return true;
    switch (may_read_across_wan(view_.version, view_.workers, request_.reader, c)) {
      case WanRead::kNo:
        return false;
      case WanRead::kAsSeed:
        became_seed_ = true;
        return true;
      case WanRead::kYes:
        break;
    }
    return true;
  }

  const PlanView& view_;
  const AcquirePlanRequest& request_;
  const WorkerInfo& me_;
  std::map<WorkerId, Distance> distance_;  // per holder, computed once per call
  std::set<WorkerId> newly_served_;        // holders whose slot this call takes for the reader
  std::set<WorkerId> busy_;                // holders this call assigns reads to
  bool became_seed_ = false;
};

}  // namespace

AcquirePlan DefaultPlanner::plan_acquire(const PlanView& view, const AcquirePlanRequest& request) const {
  return AcquirePlanning(view, request).run();
}

bool DefaultPlanner::release_idle_slot(const PlanView& view, WorkerId reader, WorkerId holder, bool ok) const {
  // The slot stays (sticky) while the holder may still serve chunks the reader wants.
  if (!ok) return true;
  const auto* h = view.version.find_holder(holder);
  return h == nullptr || !view.version.may_serve(*h, reader) ||
         !view.version.has_or_relays_any(*h, view.version.still_wanted(reader));
}

bool DefaultPlanner::drop_seed_on_failure(const PlanView&, WorkerId) const {
  return true;  // a seed whose read failed makes way for the next reader of its DC
}

}  // namespace tensorhub::coord
