// tensorhub bench crossdc: two datacenters joined by a WAN; the trainer (rank 0) in DC 0, readers
// in both (each process's DC label comes from TENSORHUB_DC, as the hub reads it; under netsim the
// launch agent sets it per emulated host). Per method (tensorhub, star, bcast of
// bench/methods.hpp) and version: the bytes that crossed the WAN, read from --counters-cmd keys
// starting with "wan" (netsim.sh counters: tc counters of the router's th-wan0/th-wan1), and the
// time until the last reader has the model. Ideal: S over the WAN per version (one copy).
#include <mpi.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <cstdio>
#include <set>

#include "bench/flags.hpp"
#include "bench/methods.hpp"
#include "common/command_table.hpp"
#include "common/commands.hpp"
#include "common/options.hpp"
#include "common/report.hpp"
#include "tensorhub/core/units.hpp"

namespace po = boost::program_options;

namespace tensorhub::cli {
namespace {

using namespace bench;

struct CrossDcConfig {
  SweepFlags sweep{"32MiB", 2, 0};  // -n: versions (rounds) per method
  CommonFlags common;
  std::string methods = "tensorhub,star,bcast";
};

// Bytes over the WAN in a round: the sum of the counters whose key starts with "wan".
std::optional<double> wan_bytes(const Round& r) {
  const auto& c = r.traffic["counters"];
  if (!c.is_object()) return std::nullopt;
  double sum = 0;
  bool any = false;
  for (const auto& [k, v] : c.items()) {
    if (k.rfind("wan", 0) != 0) continue;
    sum += v.get<double>();
    any = true;
  }
  return any ? std::optional<double>(sum) : std::nullopt;
}

// Mean reader seconds per DC label over every round.
std::map<std::string, double> per_dc_seconds(const std::vector<Round>& rounds, const nlohmann::json& labels) {
  std::map<std::string, std::vector<double>> s;
  for (const auto& r : rounds) {
    for (std::size_t i = 0; i < r.ranks.size(); ++i) {
      s[labels[static_cast<std::size_t>(r.ranks[i])]["dc"].get<std::string>()].push_back(r.seconds[i]);
    }
  }
  std::map<std::string, double> out;
  for (const auto& [dc, v] : s) out[dc] = mean(v);
  return out;
}

// One size: -w + -n rounds per method; rank 0 prints the table and appends the JSON to `out`.
int run_size(const CrossDcConfig& c, const Args& args, std::uint64_t bytes, std::vector<nlohmann::json>& out) {
  const Model m = make_model(c.common, bytes);
  const auto methods = parse_methods(c.methods);
  for (const auto meth : methods) {
    if (meth == Method::kStore) throw UserError("bench crossdc: methods are tensorhub, star, bcast");
  }
  FanoutRig rig(c.common, m, methods, "/tmp");
  const auto labels = rank_labels(MPI_COMM_WORLD, rig.layout().roles());
  const auto sr = sr_seconds(m.bytes, c.common.link_mbit);
  std::uint64_t version = 0;
  std::vector<std::vector<Round>> rounds(methods.size());
  for (std::size_t i = 0; i < methods.size(); ++i) {
    for (std::uint32_t v = 0; v < c.sweep.warmup + c.sweep.iters; ++v) {
      auto r = rig.run(methods[i], ++version);
      if (v >= c.sweep.warmup) rounds[i].push_back(std::move(r));
    }
  }
  rig.close();
  if (rig.rank() != 0) return 0;

  const std::string home = labels[0]["dc"].get<std::string>();
  std::set<std::string> dcs;
  int remote = 0;
  std::printf("tensorhub bench crossdc: ranks and their TENSORHUB_DC labels (trainer in '%s')\n", home.c_str());
  for (const auto& l : labels) {
    dcs.insert(l["dc"].get<std::string>());
    if (l["role"] == "reader" && l["dc"] != home) ++remote;
    std::printf("  rank %-3d %-8s %-12s dc '%s'\n", l["rank"].get<int>(), l["role"].get<std::string>().c_str(),
                l["host"].get<std::string>().c_str(), l["dc"].get<std::string>().c_str());
  }
  if (dcs.size() < 2) {
    std::printf("warning: every rank has the same DC label: the coordinator sees one datacenter\n");
  }
  std::printf("%d readers, %d of them outside the trainer's DC; S = %s, %u versions per method, S/R = %s s\n",
              rig.layout().readers(), remote, format_bytes(m.bytes).c_str(), c.sweep.iters,
              sr ? fmt(*sr, 2).c_str() : "?");

  nlohmann::json j = header("crossdc", args, c.common, m, rig.layout().world);
  j.update({{"readers", rig.layout().readers()},
            {"remote_readers", remote},
            {"versions", c.sweep.iters},
            {"warmup", c.sweep.warmup},
            {"ranks", labels},
            {"methods", nlohmann::json::array()}});
  Table table(
      {"method", "WAN MB/version", "WAN/S", "last reader s", "x S/R", "mean s per DC", "trainer MB", "verified"});
  bool verified = true;
  for (const auto& r : rounds) {
    auto s = summarize(r, m, sr);
    std::vector<double> wan;
    for (const auto& round : r) {
      if (const auto w = wan_bytes(round)) wan.push_back(*w);
    }
    const bool measured = !wan.empty() && wan.size() == r.size();
    s["wan_bytes_per_version"] = measured ? nlohmann::json(mean(wan)) : nlohmann::json();
    s["wan_ratio"] = measured ? nlohmann::json(mean(wan) / static_cast<double>(m.bytes)) : nlohmann::json();
    const auto dc_s = per_dc_seconds(r, labels);
    s["mean_reader_s_per_dc"] = dc_s;
    std::string per_dc;
    for (const auto& [dc, sec] : dc_s)
      per_dc += (per_dc.empty() ? "" : " ") + (dc.empty() ? "(none)" : dc) + ":" + fmt(sec, 2);
    verified = verified && s["verified"].get<bool>();
    const auto tb = s["trainer_bytes"];
    table.add({s["method"].get<std::string>(), measured ? fmt(mean(wan) / 1e6, 1) : "-",
               measured ? fmt(mean(wan) / static_cast<double>(m.bytes), 2) : "-",
               fmt(s["last_reader_s"].get<double>(), 2), ratio_text(s["last_reader_s"].get<double>(), sr), per_dc,
               tb.is_number() ? fmt(tb.get<double>() / 1e6, 1) : "-", s["verified"].get<bool>() ? "yes" : "NO"});
    j["methods"].push_back(s);
  }
  emit(j, table, "");
  out.push_back(std::move(j));
  std::printf(
      "WAN bytes: tc counters of the WAN link (wire bytes, with headers); ideal TensorHub: 1 S per version,"
      " star: %d S\n",
      remote);
  if (!verified) {
    std::fprintf(stderr, "tensorhub bench crossdc: some reader's bytes did not match the trainer's\n");
    return 5;
  }
  std::printf("every reader verified: sampled pattern and xxHash64 of all tensors\n");
  return 0;
}

int run_crossdc(const CrossDcConfig& c, const Args& args) {
  std::vector<nlohmann::json> results;
  int rc = 0;
  for (const auto bytes : c.sweep.sizes()) rc = std::max(rc, run_size(c, args, bytes, results));
  emit_sweep(results, c.common.json);
  return rc;
}

}  // namespace

int cmd_bench_crossdc(const Args& args) {
  CrossDcConfig c;
  po::options_description desc(help_head(
      "bench crossdc",
      "The trainer (rank 0) is in one datacenter, readers in two (TENSORHUB_DC labels). Per method and version\n"
      "(-n): bytes over the WAN (--counters-cmd keys 'wan*') and time to the last reader.\n"));
  c.sweep.add_to(desc, {.iters = "timed versions (rounds) per method and size",
                        .warmup = "untimed versions per method and size first",
                        .versions_alias = true});
  c.common.add_to(desc);
  desc.add_options()("methods", po::value(&c.methods)->default_value(c.methods),
                     "comma-separated: tensorhub,star,bcast");
  po::variables_map vm;
  if (!parse_options("bench", desc, args, vm)) return 0;
  c.sweep.resolve(vm);
  c.common.check();
  parse_methods(c.methods);
  if (c.sweep.iters == 0) throw UserError("-n/--iters (--versions) must be at least 1");
  return run_mpi_command("bench crossdc", [&](int) { return run_crossdc(c, args); });
}

}  // namespace tensorhub::cli
