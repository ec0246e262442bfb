#include "tensorhub/transfer/pull_engine.hpp"

#include <algorithm>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <thread>
#include <unordered_map>

#include "engine_trace.hpp"
#include "engine_util.hpp"
#include "landing.hpp"
#include "plan_reader.hpp"
#include "tensorhub/core/checksum.hpp"
#include "tensorhub/core/error.hpp"

namespace tensorhub::transfer {
namespace {

using Clock = std::chrono::steady_clock;

// After an error, the reads in flight get at least this long to land (bounded by the deadline).
constexpr Clock::duration kDrainGrace = std::chrono::seconds(1);

struct InFlight {
  std::uint32_t chunk = 0;
  coord::WorkerId holder = 0;
  bool origin = false;
  EngineTrace::Read trace{};
};

// One pull's mutable state; keeps PullEngine::run short.
class PullRun {
 public:
  PullRun(coord::Client& coordinator, transport::Transport& transport, coord::WorkerId self, const Manifest& m,
          std::span<const Destination> dests, const EngineOptions& o)
      : coord_(coordinator),
        transport_(transport),
        self_(self),
        m_(m),
        o_(o),
        trace_(o.trace, m, std::string(transport.name()), o.inflight),
        landing_(m, dests, o, transport) {
    for (const auto c : wanted_chunks(m, dests)) {
      queue_.push_back(c);
      total_bytes_ += m.chunks[c].length;
    }
    stats_.wanted_bytes = wanted_bytes(m, dests);
    remaining_ = queue_.size();
  }

  PullStats run() {
    const auto start = Clock::now();
    deadline_ = start + o_.deadline;
    const auto deadline = deadline_;
    try {
      while (remaining_ > 0) {
        if (o_.cancel != nullptr && o_.cancel->load()) {
          throw Cancelled("pull of '" + m_.model + "' v" + std::to_string(m_.version) + " cancelled (" +
                          std::to_string(remaining_) + " chunks left)");
        }
        bool progressed = acquire_more();
        progressed |= reap();
        // Chunks this reader now holds are announced at once (one complete() per reap), so the
        // readers relaying from it are not held back; otherwise completions go in batches.
        const bool announce = o_.relay && !held_.empty();
        // A failed read is reported at once: the coordinator must exclude that holder before this
        // reader asks for the chunk again.
        if (!results_.empty() &&
            (announce || failed_unreported_ || inflight_.empty() || results_.size() >= o_.inflight / 2 + 1)) {
          flush();
        }
        if (Clock::now() > deadline) {
          throw TimeoutError("pull of '" + m_.model + "' v" + std::to_string(m_.version) + " did not finish within " +
                             std::to_string(o_.deadline.count()) + " ms (" + std::to_string(remaining_) +
                             " chunks left)");
        }
        if (!progressed) std::this_thread::sleep_for(std::chrono::microseconds(inflight_.empty() ? backoff_us_ : 20));
      }
      flush();
    } catch (...) {
      const auto abandoned = drain_after_error();
      if (!abandoned.empty()) {
        // The caller must not reuse the buffers (nor fall back to a snapshot into them): say so
        // in a TimeoutError that keeps the original error's text.
        throw ReadsAbandoned(current_error_text() + "; then " + describe_abandoned(abandoned));
      }
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

 private:
  bool acquire_more() {
    if (queue_.empty() || inflight_.size() >= o_.inflight || Clock::now() < next_acquire_) return false;
    coord::AcquireRequest req;
    req.reader = self_;
    req.model = m_.model;
    req.version = m_.version;
    req.max_assign = o_.inflight - static_cast<std::uint32_t>(inflight_.size());
    const auto n = std::min<std::size_t>(queue_.size(), o_.acquire_window);
    req.chunks.assign(queue_.begin(), queue_.begin() + static_cast<std::ptrdiff_t>(n));
    const auto reply = coord_.acquire(req);
    ++stats_.acquire_calls;
    std::optional<std::string> invalid;  // first assignment the engine cannot use; thrown below
    for (const auto& a : reply.assignments) {
      // The coordinator's answer is input from the network: an assignment must name a chunk this
      // engine still waits for (asked for, not in flight, not done), at most once per reply.
      const auto wanted = a.chunk < m_.chunks.size() ? std::find(queue_.begin(), queue_.end(), a.chunk) : queue_.end();
      if (wanted == queue_.end()) {
        if (!invalid) invalid = describe_unwanted(a);
        // Its pin (if the coordinator took one) is released as an unread chunk.
        if (a.chunk < m_.chunks.size()) results_.push_back(coord::ChunkResult{a.chunk, a.holder, false});
        continue;
      }
      auto op = landing_.read_op(a.chunk, a.endpoint, a.region, a.offset);
      op.tag = next_tag_;
      queue_.erase(wanted);
      const auto read = trace_.posted();
      inflight_.emplace(next_tag_++, InFlight{a.chunk, a.holder, a.origin, read});
      try {
        transport_.post(op);
      } catch (const TransportError& e) {
        landing_.release(a.chunk);
        last_post_error_ = "worker " + std::to_string(a.holder) + ": " + e.what();
        trace_.ended(read, a.chunk, a.holder, a.origin, false);
        inflight_.erase(next_tag_ - 1);
        results_.push_back(coord::ChunkResult{a.chunk, a.holder, false});
        queue_.push_front(a.chunk);
        ++stats_.failed_reads;
      }
    }
    // Thrown after the assignments are in flight, so the error path releases their pins.
    if (invalid) throw TransportError(*invalid);
    for (const auto c : reply.unavailable) {
      // Every holder it could use served this chunk with a bad checksum: corrupt, not lost.
      if (const auto bad = corrupt_.find(c); bad != corrupt_.end()) {
        throw ChunksCorrupt(bad->second + "; no other holder has it (" + std::to_string(reply.unavailable.size()) +
                            " chunk(s) without a good holder)");
      }
    }
    if (!reply.unavailable.empty()) {
      throw ChunksUnavailable("'" + m_.model + "' v" + std::to_string(m_.version) + ": no live holder has " +
                              chunk_name(m_, reply.unavailable.front()) + " (" +
                              std::to_string(reply.unavailable.size()) + " chunks lost)" +
                              (last_post_error_.empty() ? "" : "; a read could not start on " + last_post_error_));
    }
    trace_.sources(reply.assignments.empty() && inflight_.empty());
    if (reply.assignments.empty()) {
      backoff_us_ = std::min(backoff_us_ * 2, 5000);
      next_acquire_ = Clock::now() + std::chrono::microseconds(backoff_us_);
    } else {
      backoff_us_ = 50;
    }
    return !reply.assignments.empty();
  }

  bool reap() {
    completions_.clear();
    transport_.poll(completions_);
    for (const auto& c : completions_) {
      const auto it = inflight_.find(c.tag);
      require(it != inflight_.end(), "completion for an unknown read");
      const InFlight f = it->second;
      inflight_.erase(it);
      const auto& spec = m_.chunks[f.chunk];
      if (!c.ok) {
        landing_.release(f.chunk);
        trace_.ended(f.trace, f.chunk, f.holder, f.origin, false);
        failed_read(f);
        continue;
      }
      const bool check = o_.verify || o_.relay;
      const auto verify_start = EngineTrace::Steady::now();
      const bool good = landing_.land(f.chunk, check, c.digest);  // on the device for device destinations
      if (check) {
        trace_.verified(f.chunk, verify_start, good);
        if (!good) {
          trace_.ended(f.trace, f.chunk, f.holder, f.origin, false);
          // A bad source costs a re-read, not the pull: reported as a failed read (the
          // coordinator never assigns this holder to this reader again), then read elsewhere.
          auto what = "'" + m_.model + "' v" + std::to_string(m_.version) + ": checksum mismatch in " +
                      chunk_name(m_, f.chunk) + " read from worker " + std::to_string(f.holder);
          if (warned_.insert(f.holder).second) log_.warn(what + "; reading it from another holder");
          corrupt_[f.chunk] = std::move(what);
          ++stats_.checksum_mismatches;
          failed_read(f);
          continue;
        }
      }
      trace_.ended(f.trace, f.chunk, f.holder, f.origin, true);
      results_.push_back(coord::ChunkResult{f.chunk, f.holder, true});
      if (o_.relay && landing_.relays(f.chunk)) {
        mark_held(o_.progress_bytes, f.chunk);
        held_.push_back(f.chunk);
      }
      auto& src = stats_.sources[f.holder];
      src.bytes += spec.length;
      ++src.chunks;
      src.origin = f.origin;
      (f.origin ? stats_.origin_bytes : stats_.relay_bytes) += spec.length;
      stats_.bytes += spec.length;
      --remaining_;
    }
    if (o_.progress && !completions_.empty()) o_.progress(stats_.bytes, total_bytes_);
    return !completions_.empty();
  }

  void failed_read(const InFlight& f) {
    results_.push_back(coord::ChunkResult{f.chunk, f.holder, false});
    queue_.push_front(f.chunk);
    ++stats_.failed_reads;
    failed_unreported_ = true;
  }

  void flush() {
    failed_unreported_ = false;
    if (results_.empty() && held_.empty()) return;
    coord::CompleteRequest req{self_, m_.model, m_.version, std::move(results_), std::move(held_), {}, {}};
    results_.clear();
    held_.clear();
    coord_.complete(req);
  }

  // Leaves no read in flight (buffers must not be written after we return) and no pin held,
  // waiting at most until the pull's deadline (and at least kDrainGrace after the error, so that
  // a pull that timed out still collects the reads about to land). Reads still in flight then
  // are abandoned: reported to the coordinator as failed (their pins go) and returned.
  std::vector<InFlight> drain_after_error() noexcept {
    std::vector<InFlight> abandoned;
    try {
      const auto until = std::max(deadline_, Clock::now() + std::min<Clock::duration>(o_.deadline, kDrainGrace));
      while (!inflight_.empty() && Clock::now() < until) {
        completions_.clear();
        transport_.poll(completions_);
        for (const auto& c : completions_) {
          const auto it = inflight_.find(c.tag);
          if (it == inflight_.end()) continue;
          landing_.release(it->second.chunk);
          trace_.ended(it->second.trace, it->second.chunk, it->second.holder, it->second.origin, false);
          results_.push_back(coord::ChunkResult{it->second.chunk, it->second.holder, c.ok});
          inflight_.erase(it);
        }
        if (completions_.empty()) std::this_thread::sleep_for(std::chrono::microseconds(50));
      }
      for (const auto& [tag, f] : inflight_) {
        landing_.abandon(f.chunk);
        abandoned.push_back(f);
        results_.push_back(coord::ChunkResult{f.chunk, f.holder, false});
      }
      inflight_.clear();
      std::sort(abandoned.begin(), abandoned.end(),
                [](const InFlight& a, const InFlight& b) { return a.chunk < b.chunk; });
    } catch (...) {
      // The original error is the one worth reporting.
    }
    try {
      flush();  // verified chunks stay announced: their bytes are good
    } catch (...) {
    }
    if (!abandoned.empty()) log_.error(describe_abandoned(abandoned));
    return abandoned;
  }

  std::string describe_abandoned(const std::vector<InFlight>& abandoned) const {
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

  std::string describe_unwanted(const coord::Assignment& a) const {
    const auto what = "coordinator assigned chunk " + std::to_string(a.chunk) + " of '" + m_.model + "' v" +
                      std::to_string(m_.version) + " (from worker " + std::to_string(a.holder) + ")";
    if (a.chunk >= m_.chunks.size()) {
      return what + ", but the version has only " + std::to_string(m_.chunks.size()) + " chunks";
    }
    return what + ", " + chunk_name(m_, a.chunk) + ", which this reader did not ask for or already reads";
  }

  coord::Client& coord_;
  transport::Transport& transport_;
  coord::WorkerId self_;
  const Manifest& m_;
  const EngineOptions& o_;
  std::deque<std::uint32_t> queue_;
  std::uint64_t total_bytes_ = 0;
  std::size_t remaining_ = 0;
  std::unordered_map<std::uint64_t, InFlight> inflight_;
  std::vector<transport::Completion> completions_;
  std::vector<coord::ChunkResult> results_;
  std::vector<std::uint32_t> held_;
  bool failed_unreported_ = false;                // results_ has a failed read
  std::map<std::uint32_t, std::string> corrupt_;  // chunks read with a bad checksum, and from whom
  std::set<coord::WorkerId> warned_;              // holders whose bad bytes were logged (once each)
  std::uint64_t next_tag_ = 1;
  int backoff_us_ = 50;
  std::string last_post_error_;  // why the last read could not even start (no data path, ...)
  Clock::time_point next_acquire_{};
  Clock::time_point deadline_{};
  Logger log_{"transfer"};
  EngineTrace trace_;
  PullStats stats_;
  Landing landing_;  // last: synchronizes the device stream first when the run goes
};

}  // namespace

PullEngine::PullEngine(coord::Client& coordinator, transport::Transport& transport, coord::WorkerId self)
    : coordinator_(coordinator), transport_(transport), self_(self), log_("transfer") {}

PullStats PullEngine::run(const Manifest& manifest, std::span<const Destination> destinations,
                          const EngineOptions& options) {
  if (options.inflight == 0) throw UserError("inflight must be at least 1");
  if (options.plan) {
    PlanReader reader(coordinator_, transport_, self_, manifest, destinations, options);
    if (auto stats = reader.run()) return *stats;
    log_.debug("the coordinator does not plan: reading '" + manifest.model + "' v" + std::to_string(manifest.version) +
               " chunk by chunk (acquire)");
  }
  PullRun run(coordinator_, transport_, self_, manifest, destinations, options);
  return run.run();
}

}  // namespace tensorhub::transfer
