// tensorhub bench stall: an RL loop. The trainer (rank 0) makes a new version every --period s;
// each rollout (ranks 1..N) "generates" for --generate s (+- --jitter, its own random draw per
// step) and then wants the newest weights. The stall is the time a rollout is blocked waiting for
// weights. Three ways to get them, in the same job, with the same generation times:
//   tensorhub  after each generation the rollout pulls the latest version if it is newer than its
//              own (relayed pulls); if not, it generates again at once with the weights it has
//   prefetch   two buffer sets: at each step boundary the rollout swaps to the version pulled
//              (pull_async) into the spare set during the generation, waiting only for what is
//              left of that pull, and starts pulling the latest, if newer, into the other set;
//              the set in use keeps relaying its version meanwhile
//   bcast      every rollout stops at every version and receives it by MPI_Bcast from the trainer
//              (synchronous weight sync: a version waits for every rollout, every rollout for it)
// Both start from version 1 already loaded; versions 2..V are timed.
#include <mpi.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <cstdio>
#include <random>

#include "bench/flags.hpp"
#include "bench/loop.hpp"
#include "common/command_table.hpp"
#include "common/commands.hpp"
#include "common/options.hpp"
#include "common/report.hpp"
#include "tensorhub/core/units.hpp"
#include "tensorhub/mpi/mpi.hpp"

namespace po = boost::program_options;

namespace tensorhub::cli {
namespace {

using namespace bench;

struct StallConfig {
  SweepFlags sweep{"32MiB", 5, 1};  // -n: versions V; -w: the first W are warm-up
  CommonFlags common;
  double period = 6;
  double generate = 4;
  double jitter = 0.25;
  std::string modes = "tensorhub,bcast,prefetch";
  std::uint64_t seed = 1;
};

// Generation times of this rank: the same sequence in both modes.
class Generator {
 public:
  Generator(const StallConfig& c, int rank) : c_(c), rng_(c.seed * 1000003u + static_cast<unsigned>(rank)) {}
  void generate() {
    std::uniform_real_distribution<double> d(-c_.jitter, c_.jitter);
    const double s = c_.generate * (1.0 + d(rng_));
    progress_sleep_until(at_offset(Clock::now(), s));
  }

 private:
  const StallConfig& c_;
  std::mt19937_64 rng_;
};

// Version 1 published and loaded everywhere (untimed), then the timed part starts: its t0.
Clock::time_point begin_timed_run(LoopRig& rig, const char* name) {
  rig.begin_run(name);
  if (rig.trainer()) rig.publish(1);
  mpi::sleepy_barrier(MPI_COMM_WORLD);
  if (!rig.trainer()) rig.pull_latest(Clock::now(), PullRecord::kFirst);  // initial load, untimed
  mpi::sleepy_barrier(MPI_COMM_WORLD);
  return Clock::now();
}

double run_tensorhub(const StallConfig& c, LoopRig& rig, std::vector<PullRecord>& recs) {
  const auto t0 = begin_timed_run(rig, "policy-pull");
  if (rig.trainer()) {
    rig.publish_on_schedule(t0, c.period, c.sweep.iters);
  } else {
    Generator gen(c, rig.rank());
    while (rig.held().value_or(0) < c.sweep.iters) {
      gen.generate();
      recs.push_back(rig.pull_latest(t0, PullRecord::kPull));
    }
  }
  mpi::sleepy_barrier(MPI_COMM_WORLD);
  return seconds_since(t0);
}

double run_prefetch(const StallConfig& c, LoopRig& rig, std::vector<PullRecord>& recs) {
  const auto t0 = begin_timed_run(rig, "policy-prefetch");
  if (rig.trainer()) {
    rig.publish_on_schedule(t0, c.period, c.sweep.iters);
  } else {
    Generator gen(c, rig.rank());
    rig.prefetch_step(t0);  // starts a pull if a newer version is there already
    while (rig.held().value_or(0) < c.sweep.iters) {
      gen.generate();
      recs.push_back(rig.prefetch_step(t0));
    }
  }
  mpi::sleepy_barrier(MPI_COMM_WORLD);
  return seconds_since(t0);
}

double run_bcast(const StallConfig& c, LoopRig& rig, std::vector<PullRecord>& recs) {
  Arena& a = rig.arena();
  if (rig.trainer()) a.fill(1);
  bcast_pieces(a.data(), a.bytes(), 0, MPI_COMM_WORLD);  // initial load, untimed
  mpi::sleepy_barrier(MPI_COMM_WORLD);
  const auto t0 = Clock::now();
  Generator gen(c, rig.rank());
  for (std::uint32_t v = 2; v <= c.sweep.iters; ++v) {
    if (rig.trainer()) {
      progress_sleep_until(at_offset(t0, (v - 1) * c.period));
      a.fill(v);
      bcast_pieces(a.data(), a.bytes(), 0, MPI_COMM_WORLD);
      continue;
    }
    gen.generate();
    PullRecord r;
    const auto start = Clock::now();
    r.at = std::chrono::duration<double>(start - t0).count();
    bcast_pieces(a.data(), a.bytes(), 0, MPI_COMM_WORLD);
    r.seconds = seconds_since(start);
    r.kind = PullRecord::kBroadcast;
    r.version = v;
    r.verified = a.matches(v) ? 1 : 0;
    recs.push_back(r);
  }
  mpi::sleepy_barrier(MPI_COMM_WORLD);
  return seconds_since(t0);
}

// Summary of one mode at rank 0; adds its table row.
nlohmann::json summarize_mode(const std::string& mode, const std::vector<std::vector<PullRecord>>& all, double wall,
                              const StallConfig& c, const Model& m, std::optional<double> sr, Table& table,
                              bool& verified) {
  // Version 1 is the untimed initial load; with -w W > 1 the steps before version W+1 is due are
  // left out too (the timed loop starts at t0, version v is due at (v-1) * period).
  const double warmup_end = static_cast<double>(c.sweep.warmup - 1) * c.period;
  const double timed_versions = static_cast<double>(c.sweep.iters - c.sweep.warmup);
  wall -= warmup_end;
  nlohmann::json rollouts = nlohmann::json::array();
  std::vector<double> per_update;
  std::vector<double> updates;
  std::vector<double> steps;
  double stall_total = 0;
  double worst = 0;
  double origin = 0;
  for (std::size_t r = 1; r < all.size(); ++r) {
    double stall = 0;
    double pulled = 0;
    nlohmann::json recs = nlohmann::json::array();
    for (const auto& p : all[r]) {
      verified = verified && p.verified == 1;
      if (p.at < warmup_end) continue;  // during the warm-up versions
      stall += p.seconds;
      worst = std::max(worst, p.seconds);
      origin += p.origin_bytes;
      if (p.kind != PullRecord::kNothingNew) ++pulled;
      recs.push_back(record_json(p, sr));
    }
    stall_total += stall;
    per_update.push_back(pulled > 0 ? stall / pulled : 0);
    updates.push_back(pulled);
    steps.push_back(static_cast<double>(recs.size()));
    rollouts.push_back({{"rank", r},
                        {"steps", recs.size()},
                        {"updates", static_cast<std::uint64_t>(pulled)},
                        {"stall_s", stall},
                        {"stall_per_update_s", per_update.back()},
                        {"records", recs}});
  }
  const double share = stall_total / (wall * static_cast<double>(all.size() - 1));
  const bool th = mode != "bcast";
  const auto per_version = th ? nlohmann::json(origin / timed_versions) : nlohmann::json();
  table.add({mode, fmt(mean(per_update), 2), ratio_text(mean(per_update), sr), fmt(worst, 2), fmt(100 * share, 1) + "%",
             fmt(mean(updates), 1), fmt(mean(steps), 1), th ? fmt(origin / timed_versions / 1e6, 1) : "-"});
  return {{"mode", mode},
          {"wall_s", wall},
          {"stall_per_update_s", mean(per_update)},
          {"stall_per_update_ratio", ratio_json(mean(per_update), sr)},
          {"max_stall_s", worst},
          {"stall_share", share},
          {"updates_per_rollout", mean(updates)},
          {"steps_per_rollout", mean(steps)},
          {"trainer_bytes_per_version", per_version},
          {"trainer_bytes_per_version_ratio", th ? nlohmann::json(origin / timed_versions / m.bytes) : per_version},
          {"rollouts", rollouts}};
}

// One size; rank 0 prints the table and appends the JSON to `out`.
int run_size(const StallConfig& c, const Args& args, std::uint64_t bytes, std::vector<nlohmann::json>& out) {
  const Model m = make_model(c.common, bytes);
  const bool prefetch = c.modes.find("prefetch") != std::string::npos;
  LoopRig rig(c.common, m, prefetch);
  const auto labels = rank_labels(MPI_COMM_WORLD, {"trainer"});
  const auto sr = sr_seconds(m.bytes, c.common.link_mbit);
  std::vector<std::string> modes;
  for (const char* mode : {"bcast", "tensorhub", "prefetch"}) {
    if (c.modes.find(mode) != std::string::npos) modes.emplace_back(mode);
  }
  std::vector<std::vector<std::vector<PullRecord>>> all;
  std::vector<double> walls;
  for (const auto& mode : modes) {
    std::vector<PullRecord> recs;
    walls.push_back(mode == "tensorhub"  ? run_tensorhub(c, rig, recs)
                    : mode == "prefetch" ? run_prefetch(c, rig, recs)
                                         : run_bcast(c, rig, recs));
    all.push_back(gather_records(recs));
  }
  rig.close();
  if (!rig.trainer()) return 0;
  std::printf(
      "tensorhub bench stall: %d rollouts, S = %s, a version every %.1f s, generation %.1f s +- %.0f%%, "
      "versions %u..%u timed, S/R = %s s\n",
      rig.rollouts(), format_bytes(m.bytes).c_str(), c.period, c.generate, 100 * c.jitter, c.sweep.warmup + 1,
      c.sweep.iters, sr ? fmt(*sr, 2).c_str() : "?");
  nlohmann::json j = header("stall", args, c.common, m, rig.rollouts() + 1);
  j.update({{"rollouts", rig.rollouts()},
            {"period_s", c.period},
            {"generate_s", c.generate},
            {"jitter", c.jitter},
            {"versions", c.sweep.iters},
            {"warmup_versions", c.sweep.warmup},
            {"seed", c.seed},
            {"ranks", labels},
            {"modes", nlohmann::json::array()}});
  Table table({"mode", "stall/update s", "x S/R", "max stall s", "stalled", "updates/rollout", "steps/rollout",
               "trainer MB/version"});
  bool verified = true;
  for (std::size_t i = 0; i < modes.size(); ++i) {
    j["modes"].push_back(summarize_mode(modes[i], all[i], walls[i], c, m, sr, table, verified));
  }
  emit(j, table, "");
  out.push_back(std::move(j));
  if (!verified) {
    std::fprintf(stderr, "tensorhub bench stall: a rollout received bytes that do not match the version\n");
    return 5;
  }
  std::printf("every update verified (version stamp and sampled pattern; pulls also per-chunk xxHash64)\n");
  return 0;
}

int run_stall(const StallConfig& c, const Args& args) {
  std::vector<nlohmann::json> results;
  int rc = 0;
  for (const auto bytes : c.sweep.sizes()) rc = std::max(rc, run_size(c, args, bytes, results));
  emit_sweep(results, c.common.json);
  return rc;
}

}  // namespace

int cmd_bench_stall(const Args& args) {
  StallConfig c;
  po::options_description desc(help_head(
      "bench stall",
      "Rank 0 trains (a version every --period s), ranks 1..N generate for --generate s then want the newest\n"
      "weights. Stall = time blocked waiting for weights, per update.\n"
      "  tensorhub  pull the latest version after each generation if newer (else keep generating)\n"
      "  bcast      every rollout stops at every version and receives it by MPI_Bcast\n"
      "  prefetch   pull the latest into a spare buffer set while generating, swap at the step boundary\n"
      "Emulated hosts: scripts/bench/stall.sh.\n"));
  c.sweep.add_to(desc, {.iters = "versions V per size; W+1..V are timed",
                        .warmup = "warm-up versions W (>= 1: version 1 is the initial load)",
                        .versions_alias = true});
  c.common.add_to(desc);
  desc.add_options()("period", po::value(&c.period)->default_value(c.period), "seconds between versions (T)")(
      "generate", po::value(&c.generate)->default_value(c.generate), "seconds of generation per step (G)")(
      "jitter", po::value(&c.jitter)->default_value(c.jitter), "generation varies by +- this fraction of G")(
      "modes", po::value(&c.modes)->default_value(c.modes),
      "tensorhub,bcast,prefetch (run in this order: bcast, tensorhub, prefetch)")(
      "seed", po::value(&c.seed)->default_value(c.seed), "seed of the generation jitter");
  po::variables_map vm;
  if (!parse_options("bench", desc, args, vm)) return 0;
  c.sweep.resolve(vm);
  c.common.check();
  if (c.sweep.warmup < 1 || c.sweep.iters <= c.sweep.warmup) {
    throw UserError("-n/--iters (--versions) V and -w/--warmup W need 1 <= W < V (version 1 is the initial load)");
  }
  if (!(c.period > 0) || !(c.generate >= 0) || !(c.jitter >= 0 && c.jitter < 1)) {
    throw UserError("--period must be > 0, --generate >= 0, --jitter in [0, 1)");
  }
  if (c.modes.find("tensorhub") == std::string::npos && c.modes.find("bcast") == std::string::npos &&
      c.modes.find("prefetch") == std::string::npos) {
    throw UserError("--modes must name tensorhub, bcast and/or prefetch");
  }
  return run_mpi_command("bench stall", [&](int) { return run_stall(c, args); });
}

}  // namespace tensorhub::cli
