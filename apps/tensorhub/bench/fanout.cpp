// tensorhub bench fanout: one trainer, N readers, every method of bench/methods.hpp in the same
// job on the same buffers. Per method: barrier, then the time until the last reader holds the
// whole model (and each reader's time), as a multiple of S/R; the bytes the trainer sent; every
// reader's bytes checked.
#include <mpi.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <cstdio>

#include "bench/flags.hpp"
#include "bench/methods.hpp"
#include "common/command_table.hpp"
#include "common/commands.hpp"
#include "common/options.hpp"
#include "common/report.hpp"
#include "tensorhub/core/env.hpp"
#include "tensorhub/core/units.hpp"

namespace po = boost::program_options;

namespace tensorhub::cli {
namespace {

struct FanoutConfig {
  bench::SweepFlags sweep{"64MiB", 1, 0};
  bench::CommonFlags common;
  std::string methods = "tensorhub,star,bcast,store";
  std::string store_dir;
};

// One size: every method -w + -n rounds; rank 0 prints the table and appends the JSON to `out`.
// Returns 5 when a reader's bytes did not match.
int run_size(const FanoutConfig& c, const Args& args, std::uint64_t bytes, std::vector<nlohmann::json>& out) {
  using namespace bench;
  const Model m = make_model(c.common, bytes);
  const auto methods = parse_methods(c.methods);
  FanoutRig rig(c.common, m, methods, c.store_dir);
  const Layout& layout = rig.layout();
  const auto labels = rank_labels(MPI_COMM_WORLD, layout.roles());
  const auto sr = sr_seconds(m.bytes, c.common.link_mbit);
  if (rig.rank() == 0) {
    std::printf("tensorhub bench fanout: %d readers, S = %s in %zu tensors, R = %s Mbit/s, S/R = %s s%s\n",
                layout.readers(), format_bytes(m.bytes).c_str(), m.specs.size(),
                c.common.link_mbit > 0 ? fmt(c.common.link_mbit, 0).c_str() : "?", sr ? fmt(*sr, 2).c_str() : "?",
                layout.storage >= 0 ? (", storage rank " + std::to_string(layout.storage)).c_str() : "");
    std::fflush(stdout);
  }
  std::uint64_t version = 0;
  std::vector<std::vector<Round>> rounds(methods.size());
  for (std::size_t i = 0; i < methods.size(); ++i) {
    for (std::uint32_t it = 0; it < c.sweep.warmup + c.sweep.iters; ++it) {
      auto r = rig.run(methods[i], ++version);
      if (it >= c.sweep.warmup) rounds[i].push_back(std::move(r));
    }
  }
  rig.close();
  if (rig.rank() != 0) return 0;

  nlohmann::json j = header("fanout", args, c.common, m, layout.world);
  j["readers"] = layout.readers();
  j["iterations"] = c.sweep.iters;
  j["warmup"] = c.sweep.warmup;
  j["ranks"] = labels;
  j["store_file_dir"] = c.store_dir;
  j["methods"] = nlohmann::json::array();
  Table table(summary_headers());
  bool verified = true;
  for (const auto& r : rounds) {
    const auto s = summarize(r, m, sr);
    table.add(summary_row(s, sr));
    verified = verified && s["verified"].get<bool>();
    j["methods"].push_back(s);
  }
  emit(j, table, "");
  out.push_back(std::move(j));
  if (!verified) {
    std::fprintf(stderr, "tensorhub bench fanout: some reader's bytes did not match the trainer's\n");
    return 5;
  }
  std::printf("every reader verified: sampled pattern and xxHash64 of all tensors\n");
  return 0;
}

int run_fanout(const FanoutConfig& c, const Args& args) {
  std::vector<nlohmann::json> results;
  int rc = 0;
  for (const auto bytes : c.sweep.sizes()) rc = std::max(rc, run_size(c, args, bytes, results));
  bench::emit_sweep(results, c.common.json);
  return rc;
}

}  // namespace

int cmd_bench_fanout(const Args& args) {
  FanoutConfig c;
  c.store_dir = env::text("TMPDIR").value_or("/tmp");
  po::options_description desc(help_head(
      "bench fanout",
      "One trainer (rank 0, runs the coordinator) sends one model version of S bytes (-b..-e) to N readers\n"
      "(ranks 1..N; with 'store' the last rank is the storage rank). Methods, in one job on the same buffers:\n"
      "  tensorhub  readers Hub::pull at once and relay to each other   star   trainer MPI_Isends S to every reader\n"
      "  bcast      MPI_Bcast (Open MPI default algorithm)              store  trainer -> storage rank -> HDF5 file\n"
      "                                                                        -> read and sent to each reader\n"
      "Reports the last reader's and the mean reader's time (and x S/R with --link-mbit), the bytes the trainer\n"
      "sent, and checks every reader's bytes. Exit 5 if a reader's bytes differ.\n"
      "Emulated hosts: scripts/bench/fanout.sh (netsim, one rank per host, --map-by node).\n"));
  c.sweep.add_to(desc, {.iters = "timed rounds per method and size (median of the last-reader times)",
                        .warmup = "untimed rounds per method and size first"});
  c.common.add_to(desc);
  desc.add_options()("methods", po::value(&c.methods)->default_value(c.methods),
                     "comma-separated: tensorhub,star,bcast,store")(
      "store-dir", po::value(&c.store_dir)->default_value(c.store_dir), "where the storage rank writes its HDF5 file");
  po::variables_map vm;
  if (!parse_options("bench", desc, args, vm)) return 0;
  c.sweep.resolve(vm);
  c.common.check();
  bench::parse_methods(c.methods);
  if (c.sweep.iters == 0) throw UserError("-n/--iters must be at least 1");
  return run_mpi_command("bench fanout", [&](int) { return run_fanout(c, args); });
}

}  // namespace tensorhub::cli
