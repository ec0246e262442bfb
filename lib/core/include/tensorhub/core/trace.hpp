// A timeline of what one process did, as Chrome trace-event JSON (the format Perfetto,
// ui.perfetto.dev, and chrome://tracing open): complete events ("ph":"X") on lanes ("tid"),
// one process per recorder ("pid", usually the rank). The hub records control calls, every
// chunk read (source worker, transport, bytes, start and end), verification and waits; see
// README "Observability".
//
// Thread-safe (one mutex) and bounded: past `max_events` further events are counted as dropped
// (reported in the file's "otherData"), never stored. Timestamps are wall-clock microseconds
// (system_clock), so the files of several processes or hosts line up when merged.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace tensorhub {

struct TraceArg {
  std::string key;
  std::variant<std::int64_t, double, std::string> value;
};

class TraceRecorder {
 public:
  using Clock = std::chrono::system_clock;
  static constexpr std::size_t kDefaultMaxEvents = 200000;

  // Lanes every recorder names: the calling (user) thread, the heartbeat thread; reads in
  // flight use kReadLane + slot.
  static constexpr std::uint32_t kCallLane = 0;
  static constexpr std::uint32_t kHeartbeatLane = 1;
  static constexpr std::uint32_t kReadLane = 100;

  TraceRecorder(int pid, std::string process_name, std::size_t max_events = kDefaultMaxEvents);

  static Clock::time_point now() { return Clock::now(); }
  // A span [start, end] named `name` in category `cat` on `lane`.
  void span(std::string name, std::string cat, std::uint32_t lane, Clock::time_point start, Clock::time_point end,
            std::vector<TraceArg> args = {});
  // A point in time (ph "i").
  void instant(std::string name, std::string cat, std::uint32_t lane, Clock::time_point at,
               std::vector<TraceArg> args = {});
  // Names a lane in the viewer (kept even when events are dropped).
  void name_lane(std::uint32_t lane, std::string name);

  std::size_t events() const;
  std::size_t dropped() const;
  // The whole trace as one JSON object {"traceEvents": [...], ...}.
  std::string json() const;
  // Writes json() to `path` (UserError naming the path if it cannot).
  void write(const std::string& path) const;

 private:
  struct Event {
    std::string name;
    std::string cat;
    char phase;
    std::uint32_t lane;
    std::int64_t ts_us;
    std::int64_t dur_us;
    std::vector<TraceArg> args;
  };
  void add(Event e);

  int pid_;
  std::string process_name_;
  std::size_t max_events_;
  mutable std::mutex mu_;
  std::vector<Event> events_;
  std::map<std::uint32_t, std::string> lanes_;
  std::size_t dropped_ = 0;
};

// Records one span from construction to destruction (a no-op with a null recorder).
class TraceScope {
 public:
  TraceScope(TraceRecorder* r, std::string name, std::string cat, std::vector<TraceArg> args = {},
             std::uint32_t lane = TraceRecorder::kCallLane)
      : r_(r), name_(std::move(name)), cat_(std::move(cat)), args_(std::move(args)), lane_(lane) {
    if (r_) start_ = TraceRecorder::now();
  }
  ~TraceScope() {
    if (r_) r_->span(std::move(name_), std::move(cat_), lane_, start_, TraceRecorder::now(), std::move(args_));
  }
  TraceScope(const TraceScope&) = delete;
  TraceScope& operator=(const TraceScope&) = delete;

 private:
  TraceRecorder* r_;
  std::string name_;
  std::string cat_;
  std::vector<TraceArg> args_;
  std::uint32_t lane_;
  TraceRecorder::Clock::time_point start_{};
};

// The file one process of a job writes for the trace option `path`: `path` itself in a job of
// one process, else `path` with ".rank<rank>" appended before a ".json" suffix
// (trace.json -> trace.rank3.json; trace -> trace.rank3).
std::string trace_file_for_rank(const std::string& path, int rank, int size);

// One trace from several (their traceEvents concatenated, dropped counts summed). UserError
// naming the input that is not a trace file.
std::string merge_traces(const std::vector<std::string>& jsons);

}  // namespace tensorhub
