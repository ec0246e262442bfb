// The RL-loop pieces `bench stall` and `bench elastic` share: rank 0 is the trainer (and runs the
// coordinator) and publishes a new version of the model on a schedule; every other rank is a
// rollout that pulls the latest version into its buffer and records each pull, or (prefetch)
// pulls it asynchronously into a spare buffer set while generating and swaps at a step boundary.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bench/bench_common.hpp"
#include "tensorhub/hub.hpp"

namespace tensorhub::cli::bench {

// One pull (or one step that found nothing newer) of one rollout.
struct PullRecord {
  enum Kind { kFirst = 0, kPull = 1, kNothingNew = 2, kBroadcast = 3 };
  double at = 0;       // seconds since the run's start when the rollout asked for weights
  double seconds = 0;  // until the weights were in place: the stall
  double version = 0;
  double origin_bytes = 0;
  double relay_bytes = 0;
  double verified = 0;
  Kind kind = kPull;
  // The pull's stages (PullResult): resolve, transfer, no source within it, verification.
  double resolve_s = 0;
  double transfer_s = 0;
  double no_source_s = 0;
  double verify_s = 0;
};

// Every rank's records at rank 0 (empty elsewhere); collective.
std::vector<std::vector<PullRecord>> gather_records(const std::vector<PullRecord>& mine);
nlohmann::json record_json(const PullRecord& r, std::optional<double> sr);

class LoopRig {
 public:
  // Collective: joins the hub (trainer: two model buffers used in turn; rollouts: one, or two
  // with `rollout_spare` for prefetching).
  LoopRig(const CommonFlags& f, const Model& m, bool rollout_spare = false);
  LoopRig(const LoopRig&) = delete;
  LoopRig& operator=(const LoopRig&) = delete;

  bool trainer() const { return rank_ == 0; }
  int rank() const { return rank_; }
  int rollouts() const { return world_ - 1; }
  Arena& arena() { return arenas_[current_]; }  // a rollout's current buffer; the trainer's first one
  // Starts a new run under model name `model`: the trainer unpublishes what it published, a
  // rollout stops relaying its buffers and forgets the version it held.
  void begin_run(const std::string& model);

  // Trainer: publishes version v (1, 2, ...) from buffer v % 2, first withdrawing the version that
  // buffer held (unpublish waits for its readers).
  void publish(std::uint64_t v);
  // Trainer: publishes versions 2..`last` at t0 + (v-1) * period (version 1 is published already).
  void publish_on_schedule(Clock::time_point t0, double period, std::uint64_t last);
  // Rollout: resolves and pulls the latest version when it is newer than what it holds
  // (kind kNothingNew and no pull otherwise). `t0` is the run's start.
  PullRecord pull_latest(Clock::time_point t0, PullRecord::Kind kind);
  std::optional<std::uint64_t> held() const { return held_; }
  // Rollout with a spare set, at a step boundary: waits for the pull started at the previous
  // boundary (the stall) and swaps to it, then starts pulling the latest version, if newer than
  // the one held, into the spare set (hub.pull_async: it fills while the rollout generates).
  PullRecord prefetch_step(Clock::time_point t0);
  // Rollout: waits up to `timeout` for a version newer than the one held.
  bool wait_newer(std::chrono::milliseconds timeout);
  // Collective: withdraws the trainer's versions and closes the hub.
  void close();

 private:
  int rank_ = 0;
  int world_ = 0;
  std::unique_ptr<Hub> hub_;
  std::string trace_;  // --trace: merged at close
  std::vector<Arena> arenas_;
  std::vector<std::optional<std::uint64_t>> published_;  // per trainer buffer
  std::optional<std::uint64_t> held_;
  std::string model_ = "policy";
  std::size_t current_ = 0;  // a rollout's buffer in use
  PullHandle pending_;       // prefetch into the other one
};

}  // namespace tensorhub::cli::bench
