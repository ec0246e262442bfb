#include "engine_trace.hpp"

#include <utility>

namespace tensorhub::transfer {

EngineTrace::EngineTrace(TraceRecorder* recorder, const Manifest& m, std::string transport, std::uint32_t inflight)
    : recorder_(recorder), m_(m), transport_(std::move(transport)) {
  if (!recorder_) return;
  busy_.assign(inflight, false);
  for (std::uint32_t i = 0; i < inflight; ++i) {
    recorder_->name_lane(TraceRecorder::kReadLane + i, "read slot " + std::to_string(i));
  }
}

EngineTrace::Read EngineTrace::posted() {
  if (!recorder_) return {};
  std::uint32_t lane = 0;
  while (lane < busy_.size() && busy_[lane]) ++lane;
  if (lane == busy_.size()) busy_.push_back(false);  // more posted than the window: a lane more
  busy_[lane] = true;
  return Read{lane, Wall::now()};
}

void EngineTrace::ended(const Read& r, std::uint32_t chunk, coord::WorkerId holder, bool origin, bool ok) {
  if (!recorder_) return;
  if (r.lane < busy_.size()) busy_[r.lane] = false;
  const auto& spec = m_.chunks[chunk];
  const auto& t = m_.tensors[spec.tensor];
  recorder_->span(ok ? "chunk " + std::to_string(chunk) : "chunk " + std::to_string(chunk) + " failed",
                  ok ? "chunk" : "chunk-failed", TraceRecorder::kReadLane + r.lane, r.posted, Wall::now(),
                  {{"model", m_.model},
                   {"version", static_cast<std::int64_t>(m_.version)},
                   {"chunk", static_cast<std::int64_t>(chunk)},
                   {"tensor", t.spec.name},
                   {"offset", static_cast<std::int64_t>(spec.offset)},
                   {"bytes", static_cast<std::int64_t>(spec.length)},
                   {"source_worker", static_cast<std::int64_t>(holder)},
                   {"source", std::string(origin ? "publisher" : "relay")},
                   {"transport", transport_}});
}

void EngineTrace::verified(std::uint32_t chunk, Steady::time_point start, bool ok,
                           std::optional<Steady::time_point> ended) {
  const auto now = Steady::now();
  const auto end = ended.value_or(now);
  verify_s_ += std::chrono::duration<double>(end - start).count();
  if (!recorder_) return;
  const auto wall_end = Wall::now() - std::chrono::duration_cast<Wall::duration>(now - end);
  const auto wall_start = wall_end - std::chrono::duration_cast<Wall::duration>(end - start);
  recorder_->span("verify", "verify", TraceRecorder::kCallLane, wall_start, wall_end,
                  {{"chunk", static_cast<std::int64_t>(chunk)},
                   {"bytes", static_cast<std::int64_t>(m_.chunks[chunk].length)},
                   {"ok", static_cast<std::int64_t>(ok ? 1 : 0)}});
}

void EngineTrace::sources(bool none) {
  if (none) {
    if (!waiting_since_) {
      waiting_since_ = Steady::now();
      waiting_wall_ = Wall::now();
    }
    return;
  }
  if (!waiting_since_) return;
  no_source_s_ += std::chrono::duration<double>(Steady::now() - *waiting_since_).count();
  waiting_since_.reset();
  if (recorder_) {
    recorder_->span("wait for a source", "wait", TraceRecorder::kCallLane, waiting_wall_, Wall::now(),
                    {{"model", m_.model}, {"version", static_cast<std::int64_t>(m_.version)}});
  }
}

}  // namespace tensorhub::transfer
