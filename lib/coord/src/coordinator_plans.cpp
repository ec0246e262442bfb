// Coordinator: plan-based pulls (architecture.md section 3). Which holder serves which stripe to
// which reader is the PlanBook's decision (plan_book.hpp); this file validates the request and
// applies the decision: one pin per planned source and reader, the DC seed, relay depth, and
// complete()'s plan part (held ranges, released sources, failed reads on planned sources).
#include <algorithm>
#include <map>
#include <string>

#include "tensorhub/coord/coordinator.hpp"
#include "tensorhub/core/error.hpp"
#include "tensorhub/core/limits.hpp"
#include "tensorhub/core/validate.hpp"
#include "vname.hpp"

namespace tensorhub::coord {
namespace {

void check_ranges(const std::vector<ChunkRange>& ranges, std::size_t chunks, const char* what) {
  if (ranges.size() > kMaxPlanRanges) {
    throw UserError(std::string(what) + ": " + std::to_string(ranges.size()) + " ranges (at most " +
                    std::to_string(kMaxPlanRanges) + ")");
  }
  for (const auto& r : ranges) {
    if (r.count == 0 || std::uint64_t{r.first} + r.count > chunks) {
      throw UserError(std::string(what) + ": chunk range [" + std::to_string(r.first) + ", +" +
                      std::to_string(r.count) + ") is empty or outside the version's " + std::to_string(chunks) +
                      " chunks");
    }
  }
}

}  // namespace

PlanReply Coordinator::plan(const PlanRequest& r) {
  validate_name("model name", r.model);
  std::lock_guard lock(mu_);
  reap();
  const auto& me = alive(r.reader);
  auto& v = directory_.get(r.model, r.version);
  if (!v.committed()) throw NotFoundError(vname(r.model, r.version) + " is not committed yet (shards missing)");
  const auto& man = v.manifest();
  check_ranges(r.chunks, man.chunks.size(), "plan");
  if (r.exclude.size() > kMaxPlanExclude) {
    throw UserError("plan: " + std::to_string(r.exclude.size()) + " excluded sources (at most " +
                    std::to_string(kMaxPlanExclude) + ")");
  }
  auto decided = v.plans().plan(plan_view(v), r.reader, r.chunks, r.exclude,
                                std::min(config_.plan_fanout, config_.max_readers_per_source),
                                PlanBook::Rails{config_.plan_rails, config_.plan_rail_wait});
  for (const auto holder : decided.new_pins) v.pin_read(holder, r.reader);
  if (decided.seed_dc) v.set_seed(*decided.seed_dc, r.reader);

  PlanReply reply;
  reply.waiting = std::move(decided.waiting);
  reply.unavailable = std::move(decided.unavailable);
  std::map<WorkerId, std::uint32_t> index;
  for (const auto& step : decided.steps) {
    const Holder* h = v.find_holder(step.holder);
    if (h == nullptr || !workers_.registered(step.holder)) {
      throw ContractViolation("plan: source " + std::to_string(step.holder) + " holds no reference to " +
                              vname(r.model, r.version));
    }
    auto [it, fresh] = index.try_emplace(step.holder, static_cast<std::uint32_t>(reply.sources.size()));
    if (fresh) {
      PlanSource src;
      src.holder = step.holder;
      src.endpoint = workers_.get(step.holder).endpoint;
      src.regions.resize(man.tensors.size());
      src.origin = h->origin;
      src.depth = h->depth;
      const auto& at = workers_.get(step.holder);
      src.same_host = at.host == me.host && at.rack == me.rack && at.dc == me.dc;
      const bool complete = h->origin || h->chunks_held == man.chunks.size();
      if (!complete) src.progress = h->progress;
      reply.sources.push_back(std::move(src));
      v.note_source_depth(r.reader, h->depth);
    }
    auto& src = reply.sources[it->second];
    const auto last = man.chunks[step.range.first + step.range.count - 1].tensor;
    for (auto t = man.chunks[step.range.first].tensor; t <= last; ++t) {
      if (src.regions[t].empty()) src.regions[t] = h->regions[t];
    }
    reply.steps.push_back(PlanStep{step.range, it->second});
  }
  return reply;
}

void Coordinator::planned_result(VersionState& v, const CompleteRequest& r, const ChunkResult& res) {
  if (res.ok) return;  // reads along a plan report nothing when they succeed; the pin stays
  // Like a failed assigned read: logged and counted against the holder once per (reader,
  // holder); that pair is not planned again. The pin goes with release_sources.
  const bool first = !v.failed(r.reader, res.holder);
  v.add_failed_pair(r.reader, res.holder);
  if (planner_->drop_seed_on_failure(plan_view(v), r.reader)) v.drop_seed(r.reader);
  if (!first) return;
  const auto what = "reader " + std::to_string(r.reader) + " failed to read chunk " + std::to_string(res.chunk) +
                    " of " + vname(r.model, r.version) + " from planned source " + std::to_string(res.holder);
  log_.warn(what);
  workers_.report_failure(res.holder, now(), what);
}

void Coordinator::complete_plan(VersionState& v, const CompleteRequest& r) {
  check_ranges(r.held_ranges, v.manifest().chunks.size(), "complete");
  if (r.release_sources.size() > kMaxPlanExclude) {
    throw UserError("complete: " + std::to_string(r.release_sources.size()) + " released sources (at most " +
                    std::to_string(kMaxPlanExclude) + ")");
  }
  for (const auto& range : r.held_ranges) v.mark_held_range(r.reader, range);
  for (const auto holder : r.release_sources) v.release_plan_source(r.reader, holder);  // unknown: already gone
}

}  // namespace tensorhub::coord
