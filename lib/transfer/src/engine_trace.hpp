// What the chunk engine tells the pull's observers (private header): per read a span on a lane
// of its own (source worker, origin or relay, transport, bytes, start and end), verification
// spans, and the time the pull waited without any source (no assignment and nothing in flight).
// The stage times go into PullStats whether or not a TraceRecorder is attached.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tensorhub/coord/types.hpp"
#include "tensorhub/core/manifest.hpp"
#include "tensorhub/core/trace.hpp"

namespace tensorhub::transfer {

class EngineTrace {
 public:
  using Steady = std::chrono::steady_clock;
  using Wall = TraceRecorder::Clock;

  struct Read {
    std::uint32_t lane = 0;
    Wall::time_point posted{};
  };

  // `recorder` may be null (only the stage times are kept).
  EngineTrace(TraceRecorder* recorder, const Manifest& m, std::string transport, std::uint32_t inflight);

  bool on() const { return recorder_ != nullptr; }
  // A read was posted: takes a free lane.
  Read posted();
  // The read ended (ok: its bytes arrived and, if checked, verified); frees its lane.
  void ended(const Read& r, std::uint32_t chunk, coord::WorkerId holder, bool origin, bool ok);
  // Checksum of `chunk` computed between `start` and now.
  // The check of `chunk` ran from `start` to `end` (now if unset; another thread's check ends
  // before it is reported).
  void verified(std::uint32_t chunk, Steady::time_point start, bool ok,
                std::optional<Steady::time_point> end = std::nullopt);
  // After each acquire: whether the pull now has no source at all (nothing assigned, nothing in
  // flight). A wait ends at the next assignment.
  void sources(bool none);

  double verify_seconds() const { return verify_s_; }
  double no_source_seconds() const { return no_source_s_; }

 private:
  TraceRecorder* recorder_;
  const Manifest& m_;
  std::string transport_;
  std::vector<bool> busy_;
  double verify_s_ = 0;
  double no_source_s_ = 0;
  std::optional<Steady::time_point> waiting_since_;
  Wall::time_point waiting_wall_{};
};

}  // namespace tensorhub::transfer
