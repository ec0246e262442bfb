// The chunk engine's plan mode (private header; pull_engine.hpp describes both modes): one pull
// that follows the coordinator's plan. Per chunk a state (unplanned -> planned -> reading ->
// done; a failure sends it back to unplanned); per planned source what this reader still expects
// from it and, for a relay source, its progress bytes as last read. plan_reader.cpp runs the
// pull (plan, read, report), plan_sources.cpp keeps the sources (plans accepted, progress reads,
// stalls, exclusion, release).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine_trace.hpp"
#include "landing.hpp"
#include "tensorhub/transfer/pull_engine.hpp"
#include "verifier.hpp"

namespace tensorhub::transfer {

class PlanReader {
 public:
  using Clock = std::chrono::steady_clock;

  PlanReader(coord::Client& coordinator, transport::Transport& transport, coord::WorkerId self, const Manifest& m,
             std::span<const Destination> dests, const EngineOptions& o);

  // The pull's stats; nullopt when the coordinator does not plan (PlanUnsupported on the first
  // plan() call: nothing was read, nothing is held). Throws what PullEngine::run documents.
  std::optional<PullStats> run();

 private:
  enum class State : std::uint8_t { kUnwanted, kUnplanned, kPlanned, kReading, kDone };

  struct Source {
    coord::PlanSource info;
    bool excluded = false;
    bool released = true;              // not pinned for this reader (released, or never planned)
    std::uint32_t pending = 0;         // chunks planned from it, not yet done nor given back
    std::set<std::uint32_t> awaiting;  // planned, not yet seen held in its progress bytes
    // Its progress bytes [window_first, window_first + window_count), read into `window`.
    std::unique_ptr<unsigned char[]> window;
    std::uint32_t window_cap = 0;
    std::uint32_t window_first = 0;
    std::uint32_t window_count = 0;
    bool progress_in_flight = false;
    Clock::time_point next_progress{};
    Clock::time_point last_advance{};
    std::chrono::microseconds backoff{};
  };

  struct Read {
    std::uint32_t chunk = 0;  // data reads
    coord::WorkerId holder = 0;
    bool progress = false;  // a read of the holder's progress bytes
    EngineTrace::Read trace{};
    int cls = 0;  // data reads: class_of its source
  };

  // plan_reader.cpp
  void loop();
  bool plan_more();
  bool post_reads();
  bool reap();
  // `digest`: the path's checksum of the landed bytes (Completion::digest), if it made one.
  void landed_chunk(const Read& r, bool ok, const std::string& error,
                    std::optional<std::uint64_t> digest = std::nullopt);
  // A landed chunk's check came back (inline, or from the Verifier): held, or failed as corrupt.
  void checked_chunk(const Read& r, bool check, bool good, EngineTrace::Steady::time_point verify_start,
                     std::optional<EngineTrace::Steady::time_point> verify_end = std::nullopt);
  // Hands the Verifier's results to checked_chunk; true if there were any.
  bool collect_verified();
  void failed_chunk(std::uint32_t chunk, coord::WorkerId holder, const std::string& why);
  bool report_due() const;
  void flush();
  std::vector<Read> drain_after_error() noexcept;
  std::string describe_abandoned(const std::vector<Read>& abandoned) const;
  std::string what() const;

  // plan_sources.cpp
  void accept(const coord::PlanReply& reply);
  void plan_chunk(std::uint32_t chunk, coord::WorkerId holder, Source& s);
  bool post_progress_reads();
  void landed_progress(coord::WorkerId holder, bool ok, const std::string& error);
  void check_stalls();
  // Reports `holder` failed for `chunk` (ChunkResult ok=false), excludes it from every later
  // plan and sends the chunks still expected from it back to unplanned.
  void give_up(coord::WorkerId holder, std::uint32_t chunk, const std::string& why);
  void unplan(std::uint32_t chunk);
  // Queues the release of `s` once nothing more is expected from it and nothing reads it.
  void settle(coord::WorkerId holder, Source& s);
  void release_all();
  std::uint64_t post(const transport::ReadOp& op, Read r);

  coord::Client& coord_;
  transport::Transport& transport_;
  coord::WorkerId self_;
  const Manifest& m_;
  const EngineOptions& o_;
  std::chrono::milliseconds stall_;
  std::vector<std::uint32_t> order_;  // wanted chunks, in manifest order
  std::vector<State> state_;          // by chunk id
  std::vector<coord::WorkerId> source_of_;
  std::map<coord::WorkerId, Source> sources_;
  // Planned chunks their source holds: to read. Two classes: [0] sources off this host (the
  // reader's NIC), [1] on it (NVLink, shared memory). post_reads keeps both busy: on a host of
  // GPUs with a NIC each, a reader gets a stripe over its NIC while it gets the others from its
  // neighbours (rails, plan_book.hpp), so one class must not take every read in flight.
  std::set<std::uint32_t> ready_[2];
  std::size_t reading_class_[2] = {0, 0};  // data reads in flight per class
  static int class_of(const Source& s) { return s.info.same_host ? 1 : 0; }
  bool nothing_ready() const { return ready_[0].empty() && ready_[1].empty(); }
  std::vector<coord::WorkerId> exclude_;
  std::size_t unplanned_ = 0;
  std::size_t remaining_ = 0;
  std::size_t reading_ = 0;  // data reads in flight
  std::uint64_t total_bytes_ = 0;
  std::unordered_map<std::uint64_t, Read> reads_;  // tag -> read in flight (data and progress)
  std::vector<transport::Completion> completions_;
  std::vector<coord::ChunkResult> results_;
  std::vector<std::uint32_t> held_;  // verified since the last report
  std::vector<coord::WorkerId> release_;
  bool failed_unreported_ = false;
  std::size_t done_ = 0;
  std::size_t next_report_ = 0;  // done_ at which the next quarter is reported
  std::map<std::uint32_t, std::string> corrupt_;
  std::string last_failure_;  // the last source given up on and why, for ChunksUnavailable
  std::set<coord::WorkerId> warned_;
  std::uint64_t next_tag_ = 1;
  Clock::time_point next_plan_{};
  std::chrono::milliseconds pause_;
  Clock::time_point deadline_{};
  Logger log_{"transfer"};
  EngineTrace trace_;
  PullStats stats_;
  // Landed host chunks being verified on the Verifier's threads.
  struct Verifying {
    Read read;
    bool copies = false;  // a staged chunk the verifier copies out once it matched
  };
  std::unordered_map<std::uint32_t, Verifying> verifying_;
  std::vector<Verifier::Result> verified_;
  Landing landing_;    // synchronizes the device stream when the reader goes
  Verifier verifier_;  // last: joined first, so no check reads a destination after the pull ends
};

}  // namespace tensorhub::transfer
