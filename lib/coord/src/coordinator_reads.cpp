// Coordinator: the read path (relay offers, acquire, complete). Which holder serves which chunk
// to which reader is the Planner's decision (planner.hpp); this file applies it: pins, slots,
// seeds, relay depth.
#include <algorithm>
#include <string>

#include "tensorhub/coord/coordinator.hpp"
#include "tensorhub/core/error.hpp"
#include "tensorhub/core/validate.hpp"
#include "vname.hpp"

namespace tensorhub::coord {

void Coordinator::offer_relay(const RelayOffer& o) {
  validate_name("model name", o.model);
  std::lock_guard lock(mu_);
  reap();
  alive(o.reader);
  auto& v = directory_.get(o.model, o.version);
  if (o.regions.size() != v.manifest().tensors.size()) throw UserError("relay offer: one region slot per tensor");
  if (const Holder* h = v.find_holder(o.reader)) {
    if (h->origin && !h->withdrawn) {
      throw UserError(vname(o.model, o.version) + " is published by this worker; it cannot also relay it");
    }
    if (!h->origin && !h->withdrawn && !h->withdraw_deferred) {
      // The same reader pulls the version again (e.g. other tensors into other buffers).
      v.merge_relay(o.reader, o.regions, o.progress);
      return;
    }
    if (outstanding(v, *h) > 0) {
      throw UserError(vname(o.model, o.version) +
                      " is still held by this worker (withdrawn, reads not drained); wait_drained first");
    }
  }
  v.add_relay(o.reader, o.regions, o.progress);
}

AcquireReply Coordinator::acquire(const AcquireRequest& r) {
  validate_name("model name", r.model);
  std::lock_guard lock(mu_);
  reap();
  const auto& me = alive(r.reader);
  auto& v = directory_.get(r.model, r.version);
  const auto& man = v.manifest();
  for (const auto c : r.chunks) {
    if (c >= man.chunks.size()) throw UserError("acquire: chunk id " + std::to_string(c) + " out of range");
  }
  slots_.expire(now());
  AcquirePlanRequest request;
  request.reader = r.reader;
  request.chunks = r.chunks;
  request.max_assign = std::min(std::max<std::uint32_t>(r.max_assign, 1), config_.max_assign_per_call);
  request.max_readers_per_source = config_.max_readers_per_source;
  auto plan = planner_->plan_acquire(plan_view(v), request);

  AcquireReply reply;
  reply.unavailable = std::move(plan.unavailable);
  for (const auto& pick : plan.assignments) {
    const Holder* src = v.find_holder(pick.holder);
    if (src == nullptr || !workers_.registered(pick.holder) || pick.chunk >= man.chunks.size()) {
      throw ContractViolation("planner assigned chunk " + std::to_string(pick.chunk) + " to a worker that holds no " +
                              "reference to " + vname(r.model, r.version));
    }
    v.pin_read(pick.holder, r.reader);
    slots_.add_read(pick.holder, r.reader, me.dc);
    v.note_source_depth(r.reader, src->depth);
    const auto& spec = man.chunks[pick.chunk];
    reply.assignments.push_back(Assignment{pick.chunk, pick.holder, workers_.get(pick.holder).endpoint,
                                           src->regions[spec.tensor], spec.offset, src->origin});
  }
  if (plan.seed_dc) v.set_seed(*plan.seed_dc, r.reader);
  v.set_still_wanted(r.reader, std::move(plan.waiting));
  for (const auto holder : plan.release_slots) slots_.release_if_idle(holder, r.reader);
  return reply;
}

void Coordinator::complete(const CompleteRequest& r) {
  validate_name("model name", r.model);
  std::lock_guard lock(mu_);
  reap();
  alive(r.reader);
  auto& v = directory_.get(r.model, r.version);
  const auto t = now();
  for (const auto& res : r.results) {
    if (res.chunk >= v.manifest().chunks.size()) {
      throw UserError("complete(): chunk id " + std::to_string(res.chunk) + " out of range (" +
                      vname(r.model, r.version) + " has " + std::to_string(v.manifest().chunks.size()) + " chunks)");
    }
    const bool known = v.find_holder(res.holder) != nullptr;
    if (!known && !workers_.registered(res.holder)) continue;  // declared dead meanwhile: pins went with it
    if (v.plans().planned_pair(r.reader, res.holder)) {
      planned_result(v, r, res);
      continue;
    }
    // Only a read this reader was assigned may be reported, failed or not: a report about any
    // other holder is refused before it can make that holder suspect.
    if (!v.unpin_read(res.holder, r.reader)) {
      throw UserError("complete(): chunk " + std::to_string(res.chunk) + " of " + vname(r.model, r.version) +
                      " from worker " + std::to_string(res.holder) + " was not assigned to this reader");
    }
    if (!res.ok) {
      // Logged and counted against the holder once per (reader, holder): that pair is never
      // assigned again, so a reader cannot flood the log or keep a holder suspect on its own.
      const bool first = !v.failed(r.reader, res.holder);
      v.add_failed_pair(r.reader, res.holder);
      if (planner_->drop_seed_on_failure(plan_view(v), r.reader)) v.drop_seed(r.reader);
      if (first) {
        const auto what = "reader " + std::to_string(r.reader) + " failed to read chunk " + std::to_string(res.chunk) +
                          " of " + vname(r.model, r.version) + " from worker " + std::to_string(res.holder);
        log_.warn(what);
        workers_.report_failure(res.holder, t, what);
      }
    }
    if (slots_.end_read(res.holder, r.reader, t) &&
        planner_->release_idle_slot(plan_view(v), r.reader, res.holder, res.ok)) {
      slots_.release_if_idle(res.holder, r.reader);
    }
  }
  for (const auto c : r.now_held) v.mark_held(r.reader, c);
  complete_plan(v, r);
  forget_departed_drained(r.model, r.version);  // a departed holder whose last read this was (may drop `v`)
  changed_.notify_all();
}

}  // namespace tensorhub::coord
