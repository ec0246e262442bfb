// tensorhub bench elastic: readers join one by one while the trainer keeps publishing. All ranks
// join the hub at start (an empty buffer each); reader k (rank k) makes its first pull (of the
// latest version) (k-1) * --delta s after the first reader, and from then on follows every new
// version. Reported per newcomer: the time to get the latest version (x S/R) and the bytes it
// read from the trainer (the goal is 0: served by the readers that already hold the version).
#include <mpi.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <cmath>
#include <cstdio>

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

struct ElasticConfig {
  SweepFlags sweep{"32MiB", 0, 0};  // -n: versions; 0: until the last newcomer has arrived
  CommonFlags common;
  double delta = 5;
  double period = 12;
};

std::uint32_t version_count(const ElasticConfig& c, int readers) {
  if (c.sweep.iters > 0) return c.sweep.iters;
  return 1 + static_cast<std::uint32_t>(std::floor((readers - 1) * c.delta / c.period));
}

// One size; rank 0 prints the table and appends the JSON to `out`.
int run_size(const ElasticConfig& c, const Args& args, std::uint64_t bytes, std::vector<nlohmann::json>& out) {
  const Model m = make_model(c.common, bytes);
  LoopRig rig(c.common, m);
  const auto labels = rank_labels(MPI_COMM_WORLD, {"trainer"});
  const auto sr = sr_seconds(m.bytes, c.common.link_mbit);
  const std::uint32_t versions = version_count(c, rig.rollouts());
  if (rig.trainer()) rig.publish(1);
  mpi::sleepy_barrier(MPI_COMM_WORLD);
  const auto t0 = Clock::now();
  std::vector<PullRecord> recs;
  if (rig.trainer()) {
    rig.publish_on_schedule(t0, c.period, versions);
  } else {
    progress_sleep_until(at_offset(t0, (rig.rank() - 1) * c.delta));
    recs.push_back(rig.pull_latest(t0, PullRecord::kFirst));
    while (rig.held().value_or(0) < versions) {
      if (rig.wait_newer(std::chrono::milliseconds(200))) recs.push_back(rig.pull_latest(t0, PullRecord::kPull));
    }
  }
  mpi::sleepy_barrier(MPI_COMM_WORLD);
  const double wall = seconds_since(t0);
  const auto all = gather_records(recs);
  rig.close();
  if (!rig.trainer()) return 0;

  std::printf(
      "tensorhub bench elastic: %d readers join %.1f s apart, a version every %.1f s (%u versions), S = %s, "
      "S/R = %s s\n",
      rig.rollouts(), c.delta, c.period, versions, format_bytes(m.bytes).c_str(), sr ? fmt(*sr, 2).c_str() : "?");
  nlohmann::json j = header("elastic", args, c.common, m, rig.rollouts() + 1);
  j.update({{"readers", rig.rollouts()},
            {"delta_s", c.delta},
            {"period_s", c.period},
            {"versions", versions},
            {"wall_s", wall},
            {"ranks", labels},
            {"newcomers", nlohmann::json::array()},
            {"follow_pulls", nlohmann::json::array()}});
  Table table({"rank", "joins at s", "version", "seconds", "x S/R", "trainer MB", "from peers MB", "verified"});
  bool verified = true;
  double follow_origin = 0;
  for (std::size_t r = 1; r < all.size(); ++r) {
    for (const auto& p : all[r]) {
      verified = verified && p.verified == 1;
      auto rec = record_json(p, sr);
      rec["rank"] = r;
      if (p.kind == PullRecord::kFirst) {
        j["newcomers"].push_back(rec);
        table.add({std::to_string(r), fmt(p.at, 1), std::to_string(static_cast<std::uint64_t>(p.version)),
                   fmt(p.seconds, 2), ratio_text(p.seconds, sr), fmt(p.origin_bytes / 1e6, 1),
                   fmt(p.relay_bytes / 1e6, 1), p.verified == 1 ? "yes" : "NO"});
      } else {
        follow_origin += p.origin_bytes;
        j["follow_pulls"].push_back(rec);
      }
    }
  }
  j["follow_trainer_bytes"] = follow_origin;
  out.push_back(j);
  emit(j, table, "");
  std::printf("followers' pulls of new versions: %zu, trainer sent %s for them (%u new versions)\n",
              j["follow_pulls"].size(), format_bytes(static_cast<std::uint64_t>(follow_origin)).c_str(), versions - 1);
  if (!verified) {
    std::fprintf(stderr, "tensorhub bench elastic: a reader's bytes do not match the version\n");
    return 5;
  }
  std::printf("every pull verified (per-chunk xxHash64, version stamp and sampled pattern)\n");
  return 0;
}

int run_elastic(const ElasticConfig& c, const Args& args) {
  std::vector<nlohmann::json> results;
  int rc = 0;
  for (const auto bytes : c.sweep.sizes()) rc = std::max(rc, run_size(c, args, bytes, results));
  emit_sweep(results, c.common.json);
  return rc;
}

}  // namespace

int cmd_bench_elastic(const Args& args) {
  ElasticConfig c;
  po::options_description desc(help_head(
      "bench elastic",
      "Rank 0 publishes a version every --period s; reader k (rank k) makes its first pull (k-1) * --delta s\n"
      "after reader 1, then follows every new version. Per newcomer: time to the latest version (x S/R) and\n"
      "the bytes it read from the trainer (goal: 0, served by peers). Emulated hosts: scripts/bench/elastic.sh.\n"));
  c.sweep.add_to(desc, {.iters = "versions to publish (0: 1 + floor((N-1) * delta / period), the last one "
                                 "before the last newcomer)",
                        .warmup = "must be 0: a newcomer's first pull is what is measured",
                        .versions_alias = true});
  c.common.add_to(desc);
  desc.add_options()("delta", po::value(&c.delta)->default_value(c.delta), "seconds between newcomers (delta)")(
      "period", po::value(&c.period)->default_value(c.period), "seconds between versions");
  po::variables_map vm;
  if (!parse_options("bench", desc, args, vm)) return 0;
  c.sweep.resolve(vm);
  c.common.check();
  if (c.sweep.warmup != 0) throw UserError("bench elastic has no warm-up: -w must be 0");
  if (!(c.delta >= 0) || !(c.period > 0)) throw UserError("--delta must be >= 0 and --period > 0");
  return run_mpi_command("bench elastic", [&](int) { return run_elastic(c, args); });
}

}  // namespace tensorhub::cli
