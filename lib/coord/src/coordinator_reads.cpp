// Coordinator: the read path (acquire, complete). Which holder serves which chunk to which
// reader: planner.hpp (rules), wan_seed.hpp (one WAN copy per DC), source_slots.hpp (K slots).
#include <algorithm>
#include <string>

#include "tensorhub/coord/coordinator.hpp"
#include "tensorhub/core/error.hpp"
#include "vname.hpp"
#include "wan_seed.hpp"

namespace tensorhub::coord {

bool Coordinator::candidates_for(VersionState& v, WorkerId reader, const WorkerInfo& me, std::uint32_t c,
                                 std::vector<Candidate>& cands, std::vector<Holder*>& holders) {
  const auto t = now();
  cands.clear();
  holders.clear();
  bool any_holder = false;
  bool any_failed = false;
  bool any_suspect = false;
  bool any_local = false;
  for (auto& [id, h] : v.holders()) {
    if (id == reader || !h.have[c] || !v.may_serve(h, reader)) continue;
    const auto wit = workers_.find(id);
    if (wit == workers_.end()) continue;
    if (v.failed_pairs.count({reader, id})) {  // this holder already failed this reader
      any_failed = true;
      continue;
    }
    if (liveness_.suspect(id, t)) {
      // Silent, or it failed another reader since it was last heard from: no new reads until it
      // proves alive or is declared dead (liveness.hpp). Until then the chunk is not lost.
      any_suspect = true;
      continue;
    }
    any_holder = true;
    const auto distance = distance_between(me, wit->second);
    const bool wan = distance == Distance::kOtherDc;
    any_local |= !wan;
    // Same DC: the holder's readers from its (and our) DC, limit K. Across the WAN: the readers
    // from our DC, limit 1 (the seed), which never take one of the holder's K local slots.
    const auto active = slots_.readers_from(id, me.dc);
    cands.push_back(Candidate{id, distance, active, slots_.serves(id, reader), h.origin, h.depth, wan});
    holders.push_back(&h);
  }
  if (any_local) {
    // Local first: a peer in our DC serves us, even if we have to wait for it.
    std::size_t kept = 0;
    for (std::size_t i = 0; i < cands.size(); ++i) {
      if (cands[i].wan) continue;
      cands[kept] = cands[i];
      holders[kept] = holders[i];
      ++kept;
    }
    cands.resize(kept);
    holders.resize(kept);
  } else if (!cands.empty() && !may_read_across_wan(v, workers_, reader, c)) {
    cands.clear();  // another reader of our DC brings this chunk over: wait for it
    holders.clear();
  }
  // Every holder of `c` failed this reader: wait for a peer of its DC that will hold `c` (e.g. the
  // seed that replaced it), else `c` is unavailable to it. A suspect holder may come back: wait.
  return any_holder || any_suspect || (any_failed && dc_peer_will_fetch(v, workers_, reader, c));
}

void Coordinator::release_unneeded_slots(const VersionState& v, WorkerId reader) {
  for (const auto holder : slots_.idle_slots_of(reader)) {
    const auto h = v.holders().find(holder);
    if (h == v.holders().end() || !v.wanted_from(h->second, reader)) slots_.release_if_idle(holder, reader);
  }
}

AcquireReply Coordinator::acquire(const AcquireRequest& r) {
  std::lock_guard lock(mu_);
  reap();
  const auto& me = alive(r.reader);
  auto& v = version_or_throw(r.model, r.version);
  const auto& man = v.manifest();
  for (const auto c : r.chunks) {
    if (c >= man.chunks.size()) throw UserError("acquire: chunk id " + std::to_string(c) + " out of range");
  }
  slots_.expire(now());
  const auto limit = std::min(std::max<std::uint32_t>(r.max_assign, 1), config_.max_assign_per_call);
  AcquireReply reply;
  std::vector<std::uint32_t> waiting;  // asked for, still held somewhere, not assigned now
  std::vector<Candidate> cands;
  std::vector<Holder*> holders;
  for (const auto c : r.chunks) {
    if (reply.assignments.size() >= limit) {
      waiting.push_back(c);
      continue;
    }
    if (!candidates_for(v, r.reader, me, c, cands, holders)) {
      reply.unavailable.push_back(c);
      continue;
    }
    const auto pick = choose_source(cands, config_.max_readers_per_source);
    if (!pick) {
      waiting.push_back(c);  // every holder busy (or another reader seeds it): ask again later
      continue;
    }
    Holder& src = *holders[*pick];
    ++src.pins;
    ++src.pinned_by[r.reader];
    slots_.add_read(src.worker, r.reader, me.dc);
    if (Holder* mine = v.find_holder(r.reader)) mine->depth = std::max(mine->depth, src.depth + 1);
    const auto& spec = man.chunks[c];
    reply.assignments.push_back(
        Assignment{c, src.worker, workers_.at(src.worker).endpoint, src.regions[spec.tensor], spec.offset, src.origin});
  }
  v.still_wanted[r.reader] = std::move(waiting);
  release_unneeded_slots(v, r.reader);
  return reply;
}

void Coordinator::complete(const CompleteRequest& r) {
  std::lock_guard lock(mu_);
  reap();
  alive(r.reader);
  auto& v = version_or_throw(r.model, r.version);
  const auto t = now();
  for (const auto& res : r.results) {
    if (!res.ok) {
      v.failed_pairs.insert({r.reader, res.holder});
      drop_seed(v, r.reader);  // a seed whose read failed makes way for the next reader of its DC
      const auto what = "reader " + std::to_string(r.reader) + " failed to read chunk " + std::to_string(res.chunk) +
                        " of " + vname(r.model, r.version) + " from worker " + std::to_string(res.holder);
      log_.warn(what);
      liveness_.report_failure(res.holder, t, what);
    }
    Holder* h = v.find_holder(res.holder);
    if (h == nullptr && !workers_.count(res.holder)) continue;  // declared dead meanwhile: pins went with it
    const auto not_assigned = [&] {
      return UserError("complete(): chunk " + std::to_string(res.chunk) + " of " + vname(r.model, r.version) +
                       " from worker " + std::to_string(res.holder) + " was not assigned to this reader");
    };
    if (h == nullptr) throw not_assigned();
    const auto pin = h->pinned_by.find(r.reader);
    if (pin == h->pinned_by.end() || h->pins == 0) throw not_assigned();
    --h->pins;
    if (--pin->second == 0) h->pinned_by.erase(pin);
    // The slot stays (sticky) while the holder still has chunks the reader wants.
    if (slots_.end_read(res.holder, r.reader, t) &&
        (!res.ok || !v.may_serve(*h, r.reader) || !v.wanted_from(*h, r.reader))) {
      slots_.release_if_idle(res.holder, r.reader);
    }
  }
  if (!r.now_held.empty()) {
    Holder* mine = v.find_holder(r.reader);
    if (mine == nullptr) throw UserError("complete: relay chunks reported without a relay offer");
    for (const auto c : r.now_held) {
      if (c >= mine->have.size()) throw UserError("complete: chunk id out of range");
      if (!mine->have[c]) {
        mine->have[c] = 1;
        ++mine->chunks_held;
      }
    }
  }
  forget_departed_drained(r.model, r.version);  // a departed holder whose last read this was (may drop `v`)
  changed_.notify_all();
}

}  // namespace tensorhub::coord
