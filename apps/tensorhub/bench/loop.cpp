#include "bench/loop.hpp"

#include "common/trace_merge.hpp"
#include "tensorhub/mpi/mpi.hpp"

namespace tensorhub::cli::bench {
namespace {

constexpr std::size_t kRecordFields = 11;

void set_stages(PullRecord& r, const PullResult& got) {
  r.resolve_s = got.resolve_seconds;
  r.transfer_s = got.transfer_seconds;
  r.no_source_s = got.no_source_seconds;
  r.verify_s = got.verify_seconds;
}

}  // namespace

std::vector<std::vector<PullRecord>> gather_records(const std::vector<PullRecord>& mine) {
  std::vector<double> flat;
  for (const auto& r : mine) {
    flat.insert(flat.end(), {r.at, r.seconds, r.version, r.origin_bytes, r.relay_bytes, r.verified,
                             static_cast<double>(r.kind), r.resolve_s, r.transfer_s, r.no_source_s, r.verify_s});
  }
  std::vector<std::vector<PullRecord>> out;
  for (const auto& row : gather_rows(MPI_COMM_WORLD, flat)) {
    out.emplace_back();
    for (std::size_t i = 0; i + kRecordFields <= row.size(); i += kRecordFields) {
      out.back().push_back(PullRecord{row[i], row[i + 1], row[i + 2], row[i + 3], row[i + 4], row[i + 5],
                                      static_cast<PullRecord::Kind>(static_cast<int>(row[i + 6])), row[i + 7],
                                      row[i + 8], row[i + 9], row[i + 10]});
    }
  }
  return out;
}

nlohmann::json record_json(const PullRecord& r, std::optional<double> sr) {
  static const char* kinds[] = {"first", "pull", "nothing-new", "broadcast"};
  nlohmann::json j{{"at_s", r.at},
                   {"seconds", r.seconds},
                   {"ratio", ratio_json(r.seconds, sr)},
                   {"kind", kinds[static_cast<int>(r.kind) & 3]},
                   {"version", static_cast<std::uint64_t>(r.version)},
                   {"origin_bytes", static_cast<std::uint64_t>(r.origin_bytes)},
                   {"relay_bytes", static_cast<std::uint64_t>(r.relay_bytes)},
                   {"verified", r.verified == 1}};
  // A hub pull's stages (a broadcast or a step with nothing new has none).
  if (r.kind == PullRecord::kFirst || r.kind == PullRecord::kPull) {
    j["stages"] = {{"resolve_s", r.resolve_s},
                   {"transfer_s", r.transfer_s},
                   {"no_source_s", r.no_source_s},
                   {"verify_s", r.verify_s}};
  }
  return j;
}

LoopRig::LoopRig(const CommonFlags& f, const Model& m, bool rollout_spare) {
  mpi::check(MPI_Comm_rank(MPI_COMM_WORLD, &rank_), "MPI_Comm_rank");
  mpi::check(MPI_Comm_size(MPI_COMM_WORLD, &world_), "MPI_Comm_size");
  if (world_ < 2) throw UserError("needs at least 2 ranks (trainer and >= 1 rollout); got " + std::to_string(world_));
  const int buffers = trainer() || rollout_spare ? 2 : 1;
  hub_ = Hub::join(MPI_COMM_WORLD, f.hub.to_options(static_cast<std::uint64_t>(buffers) * m.arena_bytes));
  trace_ = f.hub.trace;
  for (int i = 0; i < buffers; ++i) {
    arenas_.emplace_back(m.specs, hub_->allocate(m.arena_bytes));
    arenas_.back().clear();  // fault the pages in before any timing
  }
  published_.resize(arenas_.size());
}

void LoopRig::publish(std::uint64_t v) {
  const std::size_t b = v % arenas_.size();
  if (published_[b]) hub_->unpublish(model_, *published_[b]);
  published_[b].reset();
  arenas_[b].fill(v);
  hub_->publish(model_, v, arenas_[b].tensors());
  published_[b] = v;
}

void LoopRig::publish_on_schedule(Clock::time_point t0, double period, std::uint64_t last) {
  for (std::uint64_t v = 2; v <= last; ++v) {
    progress_sleep_until(at_offset(t0, static_cast<double>(v - 1) * period));
    publish(v);
  }
}

PullRecord LoopRig::pull_latest(Clock::time_point t0, PullRecord::Kind kind) {
  PullRecord r;
  const auto start = Clock::now();
  r.at = std::chrono::duration<double>(start - t0).count();
  const auto latest = hub_->latest(model_);
  if (!latest || (held_ && *latest <= *held_)) {
    r.kind = PullRecord::kNothingNew;
    r.version = held_ ? static_cast<double>(*held_) : 0;
    r.verified = 1;
    r.seconds = seconds_since(start);
    return r;
  }
  const auto got = hub_->pull(model_, Version::exact(*latest), arena().tensors());
  r.seconds = seconds_since(start);
  r.kind = kind;
  r.version = static_cast<double>(got.version);
  r.origin_bytes = static_cast<double>(got.origin_bytes);
  r.relay_bytes = static_cast<double>(got.relay_bytes);
  r.verified = arena().matches(got.version) ? 1 : 0;
  set_stages(r, got);
  held_ = got.version;
  return r;
}

void LoopRig::begin_run(const std::string& model) {
  if (pending_.valid()) pending_.cancel();
  pending_ = PullHandle();
  if (trainer()) {
    for (auto& p : published_) {
      if (p) hub_->unpublish(model_, *p);
      p.reset();
    }
  } else {
    for (auto& a : arenas_) hub_->stop_relaying(a.tensors());
  }
  held_.reset();
  current_ = 0;
  model_ = model;
}

PullRecord LoopRig::prefetch_step(Clock::time_point t0) {
  require(arenas_.size() == 2, "prefetch_step without a spare buffer set");
  PullRecord r;
  const auto start = Clock::now();
  r.at = std::chrono::duration<double>(start - t0).count();
  r.kind = PullRecord::kNothingNew;
  r.version = held_ ? static_cast<double>(*held_) : 0;
  r.verified = 1;
  if (pending_.valid()) {
    const auto got = pending_.result();  // the wait is the stall; 0 once the spare set is full
    pending_ = PullHandle();
    current_ = 1 - current_;
    held_ = got.version;
    r.kind = PullRecord::kPull;
    r.version = static_cast<double>(got.version);
    r.origin_bytes = static_cast<double>(got.origin_bytes);
    r.relay_bytes = static_cast<double>(got.relay_bytes);
    r.verified = arena().matches(got.version) ? 1 : 0;
    set_stages(r, got);
  }
  const auto latest = hub_->latest(model_);
  if (latest && (!held_ || *latest > *held_)) {
    pending_ = hub_->pull_async(model_, Version::exact(*latest), arenas_[1 - current_].tensors());
  }
  r.seconds = seconds_since(start);
  return r;
}

bool LoopRig::wait_newer(std::chrono::milliseconds timeout) {
  return hub_->wait_for(model_, held_, timeout).has_value();
}

void LoopRig::close() {
  if (pending_.valid()) pending_.cancel();
  if (trainer()) {
    for (auto& p : published_) {
      if (p) hub_->unpublish(model_, *p);
      p.reset();
    }
  }
  mpi::sleepy_barrier(MPI_COMM_WORLD);
  hub_->close();
  merge_job_trace(MPI_COMM_WORLD, trace_);
}

}  // namespace tensorhub::cli::bench
