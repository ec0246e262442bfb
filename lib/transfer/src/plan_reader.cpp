// PlanReader: the loop of a plan-based pull (plan -> read -> verify -> report), its error path
// and its reports. The sources' side (plans accepted, progress bytes, stalls) is in
// plan_sources.cpp.
#include "plan_reader.hpp"

#include <algorithm>
#include <thread>

#include "engine_util.hpp"
#include "tensorhub/core/error.hpp"

namespace tensorhub::transfer {
namespace {

using Clock = PlanReader::Clock;

// After an error, the reads in flight get at least this long to land (bounded by the deadline).
constexpr Clock::duration kDrainGrace = std::chrono::seconds(1);

// The coordinator does not plan: PlanReader::run answers nullopt.
struct NoPlans {};

std::chrono::milliseconds stall_of(const EngineOptions& o) {
  if (o.stall_timeout.count() > 0) return o.stall_timeout;
  return std::clamp<std::chrono::milliseconds>(o.deadline / 8, std::chrono::milliseconds(100),
                                               std::chrono::milliseconds(10000));
}

}  // namespace

PlanReader::PlanReader(coord::Client& coordinator, transport::Transport& transport, coord::WorkerId self,
                       const Manifest& m, std::span<const Destination> dests, const EngineOptions& o)
    : coord_(coordinator),
      transport_(transport),
      self_(self),
      m_(m),
      o_(o),
      stall_(stall_of(o)),
      pause_(std::max<std::chrono::milliseconds>(o.replan_pause, std::chrono::milliseconds(1))),
      trace_(o.trace, m, std::string(transport.name()), o.inflight),
      landing_(m, dests, o, transport),
      verifier_(o.verify || o.relay ? o.verify_threads : 0) {
  state_.assign(m.chunks.size(), State::kUnwanted);
  source_of_.assign(m.chunks.size(), 0);
  order_ = wanted_chunks(m, dests);
  for (const auto c : order_) total_bytes_ += m.chunks[c].length;
  stats_.wanted_bytes = wanted_bytes(m, dests);
  for (const auto c : order_) state_[c] = State::kUnplanned;
  unplanned_ = remaining_ = order_.size();
  next_report_ = (order_.size() + 3) / 4;
  stats_.planned = true;
}

std::string PlanReader::what() const { return "pull of '" + m_.model + "' v" + std::to_string(m_.version); }

std::optional<PullStats> PlanReader::run() {
  const auto start = Clock::now();
  deadline_ = start + o_.deadline;
  try {
    loop();
  } catch (const NoPlans&) {
    return std::nullopt;  // nothing planned, read or pinned yet
  } catch (...) {
    const auto abandoned = drain_after_error();
    if (!abandoned.empty()) throw ReadsAbandoned(current_error_text() + "; then " + describe_abandoned(abandoned));
    throw;
  }
  stats_.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  stats_.verify_seconds = trace_.verify_seconds();
  stats_.no_source_seconds = trace_.no_source_seconds();
  stats_.bounced_bytes = landing_.bounced_bytes();
  stats_.staged_bytes = landing_.staged_bytes();
  stats_.scattered_bytes = landing_.scattered_bytes();
  stats_.digested_bytes = landing_.digested_bytes();
  return stats_;
}

void PlanReader::loop() {
  // Until every chunk is done and no read (a progress read too) is in flight.
  while (remaining_ > 0 || !reads_.empty()) {
    if (o_.cancel != nullptr && o_.cancel->load()) {
      throw Cancelled(what() + " cancelled (" + std::to_string(remaining_) + " chunks left)");
    }
    bool progressed = plan_more();
    progressed |= post_reads();
    progressed |= post_progress_reads();
    progressed |= reap();
    check_stalls();
    if (failed_unreported_ || report_due()) flush();
    if (Clock::now() > deadline_) {
      throw TimeoutError(what() + " did not finish within " + std::to_string(o_.deadline.count()) + " ms (" +
                         std::to_string(remaining_) + " chunks left)");
    }
    trace_.sources(reading_ == 0 && nothing_ready() && remaining_ > 0);
    if (!progressed) {
      std::this_thread::sleep_for(std::chrono::microseconds(reads_.empty() && verifying_.empty() ? 200 : 20));
    }
  }
  release_all();
  flush();
}

bool PlanReader::plan_more() {
  if (unplanned_ == 0 || Clock::now() < next_plan_) return false;
  // The failures behind this plan reach the coordinator first, and so do the sources this reader
  // is done with: a reader that waits for some chunks must not keep a source's child slot it no
  // longer uses (K = 1: the reader that waits on it may hold the slot this one waits for; two
  // readers of different boxes, neither relaying, would wait for each other until the deadline).
  if (!results_.empty() || !release_.empty()) flush();
  coord::PlanRequest req;
  req.reader = self_;
  req.model = m_.model;
  req.version = m_.version;
  std::vector<std::uint32_t> want;
  for (const auto c : order_) {
    if (state_[c] == State::kUnplanned) want.push_back(c);
  }
  req.chunks = to_ranges(std::move(want));
  req.exclude = exclude_;
  coord::PlanReply reply;
  try {
    reply = coord_.plan(req);
  } catch (const coord::PlanUnsupported& e) {
    if (stats_.plan_calls == 0) throw NoPlans{};
    throw TransportError(what() + ": the coordinator stopped planning in the middle of the pull: " + e.what());
  }
  ++stats_.plan_calls;
  accept(reply);
  if (unplanned_ > 0) {
    // Some chunks have no source yet (`waiting`): ask again after a pause that grows.
    next_plan_ = Clock::now() + pause_;
    pause_ =
        std::min(pause_ * 2, std::max<std::chrono::milliseconds>(o_.replan_pause, std::chrono::milliseconds(1)) * 64);
  } else {
    pause_ = std::max<std::chrono::milliseconds>(o_.replan_pause, std::chrono::milliseconds(1));
  }
  return true;
}

bool PlanReader::post_reads() {
  bool posted = false;
  while (reading_ < o_.inflight && !nothing_ready()) {
    // The lowest ready chunk of the class with fewer reads in flight (the lower chunk on a tie;
    // the other class when one has nothing ready).
    int cls = ready_[0].empty() ? 1 : 0;
    if (!ready_[0].empty() && !ready_[1].empty()) {
      const auto a = reading_class_[0];
      const auto b = reading_class_[1];
      cls = a != b ? (b < a ? 1 : 0) : (*ready_[1].begin() < *ready_[0].begin() ? 1 : 0);
    }
    auto& ready = ready_[cls];
    const auto c = *ready.begin();
    const auto holder = source_of_[c];
    const auto& s = sources_.at(holder);
    const auto& spec = m_.chunks[c];
    // Every slot is busy: the verifier frees them.
    if (!landing_.can_read(c, s.info.endpoint, s.info.regions[spec.tensor])) break;
    ready.erase(ready.begin());
    state_[c] = State::kReading;
    ++reading_;
    ++reading_class_[cls];
    const auto trace = trace_.posted();
    try {
      post(landing_.read_op(c, s.info.endpoint, s.info.regions[spec.tensor], spec.offset),
           Read{c, holder, false, trace, cls});
      posted = true;
    } catch (const TransportError& e) {
      landing_.release(c);
      --reading_;
      --reading_class_[cls];
      landed_chunk(Read{c, holder, false, trace, cls}, false, e.what());
    }
  }
  return posted;
}

std::uint64_t PlanReader::post(const transport::ReadOp& op, Read r) {
  auto tagged = op;
  tagged.tag = next_tag_++;
  transport_.post(tagged);
  reads_.emplace(tagged.tag, r);
  return tagged.tag;
}

bool PlanReader::reap() {
  completions_.clear();
  transport_.poll(completions_);
  bool chunks = false;
  for (const auto& c : completions_) {
    const auto it = reads_.find(c.tag);
    require(it != reads_.end(), "completion for an unknown read");
    const Read r = it->second;
    reads_.erase(it);
    if (r.progress) {
      landed_progress(r.holder, c.ok, c.error);
      continue;
    }
    --reading_;
    --reading_class_[r.cls];
    chunks = true;
    landed_chunk(r, c.ok, c.error, c.digest);
  }
  const bool checked = !verifying_.empty() && collect_verified();
  chunks |= checked;
  if (o_.progress && chunks) o_.progress(stats_.bytes, total_bytes_);
  return !completions_.empty() || checked;
}

void PlanReader::landed_chunk(const Read& r, bool ok, const std::string& error, std::optional<std::uint64_t> digest) {
  const auto& s = sources_.at(r.holder);
  const auto& spec = m_.chunks[r.chunk];
  if (!ok) {
    landing_.release(r.chunk);
    trace_.ended(r.trace, r.chunk, r.holder, s.info.origin, false);
    failed_chunk(r.chunk, r.holder, "read of " + chunk_name(m_, r.chunk) + " failed: " + error);
    return;
  }
  const bool check = o_.verify || o_.relay;
  const auto verify_start = EngineTrace::Steady::now();
  if (check && verifier_.async() && !digest) {
    // A host chunk in place, or one in a staging slot (copied out once verified); a chunk the
    // path hashed as it copied (digest) is checked at once below.
    const auto* bytes = landing_.host_bytes(r.chunk);
    std::function<void()> then;
    if (bytes == nullptr && (bytes = landing_.staged_slot(r.chunk)) != nullptr) then = landing_.host_scatter(r.chunk);
    if (bytes != nullptr) {
      verifying_.emplace(r.chunk, Verifying{r, static_cast<bool>(then)});
      verifier_.submit(r.chunk, bytes, spec.length, m_.checksum_algorithm, spec.checksum, std::move(then));
      return;
    }
    if (const auto sc = landing_.scattered(r.chunk)) {  // landed in the pieces of a strided box
      verifying_.emplace(r.chunk, Verifying{r, false});
      verifier_.submit(r.chunk, sc->base, *sc->pieces, m_.checksum_algorithm, spec.checksum);
      return;
    }
  }
  const bool good = landing_.land(r.chunk, check, digest);  // on the device for device destinations
  checked_chunk(r, check, good, verify_start);
}

bool PlanReader::collect_verified() {
  verified_.clear();
  verifier_.collect(verified_);
  for (const auto& v : verified_) {
    const auto it = verifying_.find(v.chunk);
    require(it != verifying_.end(), "a verified chunk that was not submitted");
    const Read r = it->second.read;
    const bool copied = it->second.copies;
    verifying_.erase(it);
    if (landing_.staged_slot(r.chunk) != nullptr) landing_.finish_staged(r.chunk, v.good, copied);
    landing_.finish_scattered(r.chunk, v.good);
    checked_chunk(r, true, v.good, v.start, v.end);
  }
  return !verified_.empty();
}

void PlanReader::checked_chunk(const Read& r, bool check, bool good, EngineTrace::Steady::time_point verify_start,
                               std::optional<EngineTrace::Steady::time_point> verify_end) {
  const auto& s = sources_.at(r.holder);
  const auto& spec = m_.chunks[r.chunk];
  if (check) {
    trace_.verified(r.chunk, verify_start, good, verify_end);
    if (!good) {
      trace_.ended(r.trace, r.chunk, r.holder, s.info.origin, false);
      auto bad = "'" + m_.model + "' v" + std::to_string(m_.version) + ": checksum mismatch in " +
                 chunk_name(m_, r.chunk) + " read from worker " + std::to_string(r.holder);
      corrupt_[r.chunk] = bad;
      ++stats_.checksum_mismatches;
      failed_chunk(r.chunk, r.holder, bad);
      return;
    }
  }
  trace_.ended(r.trace, r.chunk, r.holder, s.info.origin, true);
  state_[r.chunk] = State::kDone;
  if (landing_.relays(r.chunk)) {
    mark_held(o_.progress_bytes, r.chunk);
    held_.push_back(r.chunk);
  }
  auto& src = stats_.sources[r.holder];
  src.bytes += spec.length;
  ++src.chunks;
  src.origin = s.info.origin;
  (s.info.origin ? stats_.origin_bytes : stats_.relay_bytes) += spec.length;
  stats_.bytes += spec.length;
  --remaining_;
  ++done_;
  auto& mine = sources_.at(r.holder);
  --mine.pending;
  settle(r.holder, mine);
}

void PlanReader::failed_chunk(std::uint32_t chunk, coord::WorkerId holder, const std::string& why) {
  ++stats_.failed_reads;
  unplan(chunk);
  auto& s = sources_.at(holder);
  if (!s.excluded) give_up(holder, chunk, why);
  settle(holder, s);
}

bool PlanReader::report_due() const {
  // Each quarter of the pull (relay followers read the progress bytes, not these reports).
  return o_.relay && !held_.empty() && done_ >= next_report_;
}

void PlanReader::flush() {
  failed_unreported_ = false;
  if (results_.empty() && held_.empty() && release_.empty()) return;
  while (next_report_ <= done_ && next_report_ < order_.size())
    next_report_ += std::max<std::size_t>(1, (order_.size() + 3) / 4);
  coord::CompleteRequest req;
  req.reader = self_;
  req.model = m_.model;
  req.version = m_.version;
  req.results = std::move(results_);
  if (o_.relay) req.held_ranges = to_ranges(std::move(held_));
  req.release_sources = std::move(release_);
  results_.clear();
  held_.clear();
  release_.clear();
  ++stats_.complete_calls;
  coord_.complete(req);
}

std::vector<PlanReader::Read> PlanReader::drain_after_error() noexcept {
  std::vector<Read> abandoned;
  verifier_.wait_idle();  // no check reads a destination any more; unchecked chunks are not held
  for (const auto& [chunk, r] : verifying_) landing_.release(chunk);  // staged: never copied out
  verifying_.clear();
  try {
    const auto until = std::max(deadline_, Clock::now() + std::min<Clock::duration>(o_.deadline, kDrainGrace));
    while (!reads_.empty() && Clock::now() < until) {
      completions_.clear();
      transport_.poll(completions_);
      for (const auto& c : completions_) {
        const auto it = reads_.find(c.tag);
        if (it == reads_.end()) continue;
        const Read r = it->second;
        reads_.erase(it);
        if (r.progress) {
          sources_.at(r.holder).progress_in_flight = false;
          continue;
        }
        landing_.release(r.chunk);
        trace_.ended(r.trace, r.chunk, r.holder, sources_.at(r.holder).info.origin, false);
        if (!c.ok) results_.push_back(coord::ChunkResult{r.chunk, r.holder, false});
      }
      if (completions_.empty()) std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    for (const auto& [tag, r] : reads_) {
      if (r.progress) {
        // The transport may still write this buffer: it is left allocated (a few bytes, once).
        (void)sources_.at(r.holder).window.release();
        continue;
      }
      landing_.abandon(r.chunk);
      abandoned.push_back(r);
      results_.push_back(coord::ChunkResult{r.chunk, r.holder, false});
    }
    reads_.clear();
    std::sort(abandoned.begin(), abandoned.end(), [](const Read& a, const Read& b) { return a.chunk < b.chunk; });
  } catch (...) {
    // The original error is the one worth reporting.
  }
  try {
    for (auto& [holder, s] : sources_) {
      if (!s.released) release_.push_back(holder);
      s.released = true;
    }
    flush();  // verified chunks stay announced: their bytes are good
  } catch (...) {
  }
  if (!abandoned.empty()) log_.error(describe_abandoned(abandoned));
  return abandoned;
}

std::string PlanReader::describe_abandoned(const std::vector<Read>& abandoned) const {
  std::string s = "abandoned " + std::to_string(abandoned.size()) +
                  " read(s) still in flight at the pull's deadline, whose destination buffers may still be "
                  "written: ";
  constexpr std::size_t kNamed = 4;
  for (std::size_t i = 0; i < abandoned.size() && i < kNamed; ++i) {
    s += (i ? "; " : "") + chunk_name(m_, abandoned[i].chunk) + " from worker " + std::to_string(abandoned[i].holder);
  }
  if (abandoned.size() > kNamed) s += "; ...";
  return s;
}

}  // namespace tensorhub::transfer
