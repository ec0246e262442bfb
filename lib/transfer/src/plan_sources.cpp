// PlanReader, the sources' side: a plan accepted (checked: it is input from the network), the
// progress bytes of relay sources read one-sidedly with a short backoff, stalled or failed
// sources given up (reported, excluded, their chunks planned again), sources released once this
// reader is done with them.
#include <algorithm>

#include "engine_util.hpp"
#include "plan_reader.hpp"
#include "tensorhub/core/error.hpp"
#include "tensorhub/core/limits.hpp"

namespace tensorhub::transfer {
namespace {

constexpr std::chrono::microseconds kMinBackoff{20};
constexpr std::chrono::microseconds kMaxBackoff{2000};
// Most progress bytes read at once (the window of a source's chunks still expected).
constexpr std::uint32_t kMaxWindow = 1u << 16;

// A plan reply carries a source's regions only for the tensors of that reply's steps (empty
// elsewhere): a source named again keeps the regions an earlier reply gave for the chunks still
// queued on it. A holder whose endpoint changed is another exposure: its old regions go.
void merge_source(coord::PlanSource& have, const coord::PlanSource& got) {
  auto regions = std::move(have.regions);
  const bool same = have.endpoint == got.endpoint;
  have = got;
  if (!same) return;
  if (have.regions.size() < regions.size()) have.regions.resize(regions.size());
  for (std::size_t t = 0; t < regions.size(); ++t) {
    if (have.regions[t].empty()) have.regions[t] = std::move(regions[t]);
  }
}

}  // namespace

void PlanReader::accept(const coord::PlanReply& reply) {
  const auto n = m_.chunks.size();
  const auto in_range = [&](const coord::ChunkRange& r) {
    return r.count > 0 && r.first < n && r.count <= n - r.first;
  };
  const auto vn = "'" + m_.model + "' v" + std::to_string(m_.version);
  std::optional<std::string> invalid;  // the first problem; thrown once every source is settled
  const auto bad = [&](const std::string& why) {
    if (!invalid) invalid = "coordinator's plan for " + vn + ": " + why;
  };
  // Every source named is pinned for this reader: known before anything can throw, so that the
  // error path releases it.
  std::vector<coord::WorkerId> ids;
  for (const auto& ps : reply.sources) {
    auto& s = sources_[ps.holder];
    ids.push_back(ps.holder);
    // A release of it still queued (not yet sent) would reach the coordinator after this plan
    // and undo the pin (and child slot) it keeps for this reader: the pin stays, released later.
    std::erase(release_, ps.holder);
    s.released = false;
    if (ps.holder == self_) bad("names this reader (worker " + std::to_string(self_) + ") as a source");
    if (s.excluded) bad("names worker " + std::to_string(ps.holder) + ", which this reader excluded");
    if (ps.endpoint.empty() || ps.endpoint.size() > limits::kMaxEndpointBytes ||
        ps.regions.size() > m_.tensors.size()) {
      bad("source worker " + std::to_string(ps.holder) + " has no usable endpoint or too many regions");
    }
    const bool was_relay = !s.info.progress.empty();
    merge_source(s.info, ps);
    if (was_relay && ps.progress.empty()) {
      // It holds everything planned from it now: what it was awaited for can be read.
      for (const auto c : s.awaiting) ready_[class_of(s)].insert(c);
      s.awaiting.clear();
    }
  }
  for (const auto& r : reply.unavailable) {
    if (!in_range(r)) {
      bad("unavailable chunks out of range");
      continue;
    }
    for (std::uint32_t c = r.first; c < r.first + r.count; ++c) {
      // Every holder it could use served this chunk with a bad checksum: corrupt, not lost.
      if (const auto it = corrupt_.find(c); it != corrupt_.end()) {
        throw ChunksCorrupt(it->second + "; no other holder has it");
      }
    }
    throw ChunksUnavailable(vn + ": no live holder has " + chunk_name(m_, r.first) + " (" + std::to_string(r.count) +
                            " chunk(s) in this run lost)" +
                            (last_failure_.empty() ? "" : "; the last source failed: " + last_failure_));
  }
  for (const auto& step : reply.steps) {
    if (step.source >= ids.size() || !in_range(step.range)) {
      bad("a step names source " + std::to_string(step.source) + " or chunks out of range");
      continue;
    }
    const auto holder = ids[step.source];
    auto& s = sources_.at(holder);
    if (s.excluded || holder == self_) continue;  // reported above
    for (std::uint32_t c = step.range.first; c < step.range.first + step.range.count; ++c) {
      const auto t = m_.chunks[c].tensor;
      if (state_[c] != State::kUnplanned) {
        bad("chunk " + std::to_string(c) + " (" + chunk_name(m_, c) + ") was not asked for or is planned already");
      } else if (t >= s.info.regions.size() || s.info.regions[t].empty()) {
        bad("worker " + std::to_string(holder) + " is planned for " + chunk_name(m_, c) +
            " but exposes no region for it");
      } else {
        plan_chunk(c, holder, s);
      }
    }
  }
  for (const auto id : ids) settle(id, sources_.at(id));
  if (invalid) throw TransportError(*invalid);
}

void PlanReader::plan_chunk(std::uint32_t c, coord::WorkerId holder, Source& s) {
  state_[c] = State::kPlanned;
  source_of_[c] = holder;
  --unplanned_;
  ++s.pending;
  if (s.info.progress.empty()) {
    ready_[class_of(s)].insert(c);
    return;
  }
  if (s.awaiting.empty()) {
    // The stall clock of a relay starts when this reader starts waiting for it.
    s.last_advance = Clock::now();
    s.next_progress = s.last_advance;
    s.backoff = kMinBackoff;
  }
  s.awaiting.insert(c);
}

bool PlanReader::post_progress_reads() {
  bool posted = false;
  const auto now = Clock::now();
  for (auto& [holder, s] : sources_) {
    if (s.excluded || s.awaiting.empty() || s.progress_in_flight || now < s.next_progress) continue;
    const auto first = *s.awaiting.begin();
    const auto count = std::min<std::uint32_t>(*s.awaiting.rbegin() - first + 1, kMaxWindow);
    if (count > s.window_cap || !s.window) {
      s.window = std::make_unique<unsigned char[]>(count);
      s.window_cap = count;
    }
    s.window_first = first;
    s.window_count = count;
    try {
      post(transport::ReadOp{s.info.endpoint, s.info.progress, first, s.window.get(), count, 0},
           Read{first, holder, true, {}});
      s.progress_in_flight = true;
      posted = true;
    } catch (const TransportError& e) {
      give_up(holder, first, std::string("its progress bytes cannot be read: ") + e.what());
      settle(holder, s);
    }
  }
  return posted;
}

void PlanReader::landed_progress(coord::WorkerId holder, bool ok, const std::string& error) {
  auto& s = sources_.at(holder);
  s.progress_in_flight = false;
  ++stats_.progress_reads;
  if (!s.excluded && !ok) {
    give_up(holder, s.awaiting.empty() ? s.window_first : *s.awaiting.begin(),
            "reading its progress bytes failed: " + error);
  } else if (!s.excluded) {
    bool advanced = false;
    const auto end = s.window_first + s.window_count;
    for (auto it = s.awaiting.lower_bound(s.window_first); it != s.awaiting.end() && *it < end;) {
      if (s.window[*it - s.window_first] != 0) {
        ready_[class_of(s)].insert(*it);
        it = s.awaiting.erase(it);
        advanced = true;
      } else {
        ++it;
      }
    }
    const auto now = Clock::now();
    if (advanced) {
      s.last_advance = now;
      s.backoff = kMinBackoff;
    } else {
      s.backoff = std::min(s.backoff * 2, kMaxBackoff);
    }
    s.next_progress = now + s.backoff;
  }
  settle(holder, s);
}

void PlanReader::check_stalls() {
  const auto now = Clock::now();
  for (auto& [holder, s] : sources_) {
    if (s.excluded || s.awaiting.empty() || now - s.last_advance <= stall_) continue;
    ++stats_.stalls;
    give_up(holder, *s.awaiting.begin(),
            "its progress bytes showed no new chunk for " + std::to_string(stall_.count()) + " ms");
    settle(holder, s);
  }
}

void PlanReader::give_up(coord::WorkerId holder, std::uint32_t chunk, const std::string& why) {
  auto& s = sources_.at(holder);
  s.excluded = true;
  exclude_.push_back(holder);
  results_.push_back(coord::ChunkResult{chunk, holder, false});
  failed_unreported_ = true;
  last_failure_ = "worker " + std::to_string(holder) + ": " + why;
  next_plan_ = Clock::now();  // the chunks it had go to another source at once
  if (warned_.insert(holder).second) {
    log_.warn(what() + ": worker " + std::to_string(holder) + " is no longer a source (" + why +
              "); planning its chunks again");
  }
  for (const auto c : s.awaiting) unplan(c);
  s.awaiting.clear();
  auto& ready = ready_[class_of(s)];
  for (auto it = ready.begin(); it != ready.end();) {
    if (source_of_[*it] == holder) {
      const auto c = *it;
      it = ready.erase(it);
      unplan(c);
    } else {
      ++it;
    }
  }
}

void PlanReader::unplan(std::uint32_t c) {
  state_[c] = State::kUnplanned;
  ++unplanned_;
  --sources_.at(source_of_[c]).pending;
}

void PlanReader::settle(coord::WorkerId holder, Source& s) {
  if (s.released || s.pending > 0 || s.progress_in_flight) return;
  s.released = true;
  release_.push_back(holder);
}

void PlanReader::release_all() {
  for (auto& [holder, s] : sources_) settle(holder, s);
}

}  // namespace tensorhub::transfer
