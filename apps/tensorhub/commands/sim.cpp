// tensorhub sim: the flow-level simulator (lib/sim). For each reader count N, every method on
// the same simulated cluster: last-reader time and its ratio to the lower bound, bytes per link
// class, and for tensorhub / tensorhub-chunk the real in-process Coordinator's control messages
// and CPU time.
#include <boost/program_options.hpp>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "common/command_table.hpp"
#include "common/commands.hpp"
#include "common/options.hpp"
#include "common/report.hpp"
#include "tensorhub/core/error.hpp"
#include "tensorhub/core/units.hpp"
#include "tensorhub/sim/scenario.hpp"

namespace tensorhub::cli {
namespace {

struct SimFlags {
  std::string preset = "netsim";
  std::string readers;
  std::string methods;
  std::string size, chunk;
  sim::Scenario s;
  std::uint32_t hosts_per_rack = 0;
  double max_chunk_reads = 4e6;
  double join_start_ms = 0, join_every_ms = 0;
  std::string json;
};

std::vector<std::uint32_t> parse_list(const std::string& text) {
  std::vector<std::uint32_t> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty() || item.find_first_not_of("0123456789") != std::string::npos || item.size() > 6)
      throw UserError("--readers must be a comma-separated list of positive numbers (got '" + text + "')");
    out.push_back(static_cast<std::uint32_t>(std::stoul(item)));
    if (out.back() == 0) throw UserError("--readers: 0 readers");
  }
  if (out.empty()) throw UserError("--readers lists no number");
  return out;
}

std::vector<std::string> split(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) out.push_back(item);
  return out;
}

// Defaults of each preset; flags given on the command line override them (applied after).
void apply_preset(SimFlags& f, const po::variables_map& vm) {
  auto set = [&](const char* flag, auto& field, auto value) {
    if (vm[flag].defaulted()) field = value;
  };
  auto& s = f.s;
  auto& t = s.topo;
  // The full-size cluster of the scenarios: 8 GPUs x 400 Gb/s per host, racks of 16, spine 2:1.
  const auto full_size = [&] {
    set("gpus-per-host", t.gpus_per_host, 8u);
    set("nic-gbps", t.nic_gbps, 400.0);
    set("chunk", f.chunk, std::string("4MiB"));
    set("oversub", t.oversub, 2.0);
    set("hosts-per-rack", f.hosts_per_rack, 16u);
  };
  if (f.preset == "netsim") {  // scripts/bench/fanout.sh: one trainer, N readers, one storage host
    set("gpus-per-host", t.gpus_per_host, 1u);
    set("nic-gbps", t.nic_gbps, 0.1);
    set("storage", t.storage, 1u);
    set("storage-gbps", t.storage_gbps, 0.1);
    set("trainers", s.trainers, 1u);
    set("k", s.max_readers_per_source, 1u);
    set("size", f.size, std::string("64MiB"));
    set("chunk", f.chunk, std::string("512KiB"));
    set("readers", f.readers, std::string("2,4,8"));
    set("goodput", t.goodput, 0.955);
  } else if (f.preset == "reshard") {  // a TP=8 trainer host, TP=2 rollouts pulling their own boxes
    full_size();
    set("trainers", s.trainers, 8u);
    set("reader-tp", s.reader_tp, 2u);
    set("size", f.size, std::string("16GiB"));
    set("readers", f.readers, std::string("8,64,256"));
    if (f.methods.empty()) f.methods = "tensorhub,star,ring,tree,ckpt";
  } else if (f.preset == "standalone" || f.preset == "crossdc" || f.preset == "elastic") {  // scenarios (a) (c) (b)
    full_size();
    set("storage", t.storage, 8u);
    set("trainers", s.trainers, 64u);
    set("size", f.size, std::string("100GiB"));
    set("readers", f.readers, std::string("8,64,256,1024"));
    if (f.preset == "crossdc") set("dcs", t.dcs, 2u);
    if (f.preset == "elastic") {  // (b): 64 spot GPUs join 960 pulling ones, during and after the pull
      set("readers", f.readers, std::string("1024"));
      set("joiners", s.joiners, 64u);
      set("join-wave", s.join_wave, 8u);
      set("join-start-ms", f.join_start_ms, 100.0);
      set("join-every-ms", f.join_every_ms, 50.0);
      if (f.methods.empty()) f.methods = "tensorhub";
    }
  } else {
    throw UserError("--preset must be netsim, standalone, crossdc, elastic or reshard (got '" + f.preset + "')");
  }
  if (f.methods.empty()) f.methods = "tensorhub,star,ring,tree,store,ckpt";
}

// Sizes the racks to hold the trainers and n readers.
void size_topology(SimFlags& f, std::uint32_t n) {
  auto& t = f.s.topo;
  const std::uint32_t per_dc_gpus = t.dcs == 1 ? f.s.trainers + n : f.s.trainers + (n + 1) / 2;
  const std::uint32_t hosts = (per_dc_gpus + t.gpus_per_host - 1) / t.gpus_per_host;
  if (f.hosts_per_rack == 0) {
    t.hosts_per_rack = hosts;
    t.racks_per_dc = 1;
  } else {
    t.hosts_per_rack = f.hosts_per_rack;
    t.racks_per_dc = (hosts + f.hosts_per_rack - 1) / f.hosts_per_rack;
  }
  f.s.readers = n;
}

nlohmann::json result_json(const sim::MethodResult& r, double S) {
  return {{"method", r.method},
          {"protocol", r.protocol},
          {"last_reader_s", r.last_s},
          {"mean_reader_s", r.mean_s},
          {"lower_bound_s", r.lower_bound_s},
          {"last_ratio", r.last_s / r.lower_bound_s},
          {"reader_s", r.reader_s},
          {"trainer_bytes", r.trainer_bytes},
          {"trainer_bytes_ratio", r.trainer_bytes / S},
          {"spine_bytes", r.spine_bytes},
          {"wan_bytes", r.wan_bytes},
          {"wan_bytes_ratio", r.wan_bytes / S},
          {"storage_bytes", r.storage_bytes},
          {"control_msgs", r.control_msgs},
          {"control_msgs_per_reader",
           r.reader_s.empty() ? 0.0 : static_cast<double>(r.control_msgs) / static_cast<double>(r.reader_s.size())},
          {"coordinator_cpu_s", r.coord_cpu_s},
          {"events", r.events},
          {"pipes", r.pipes},
          {"joiner_s", r.joiner_s},
          {"joiner_trainer_bytes", r.joiner_trainer_bytes},
          {"wall_s", r.wall_s}};
}

// One joiner's pull in units of S / (its NIC's payload rate): what one GPU needs alone.
void print_joiners(const sim::Scenario& s, const sim::MethodResult& r) {
  const double one = s.model_bytes / (s.topo.nic_gbps * 1e9 / 8 * s.topo.goodput);
  double sum = 0;
  double worst = 0;
  for (const auto x : r.joiner_s) {
    sum += x;
    worst = std::max(worst, x);
  }
  const double mean = sum / static_cast<double>(r.joiner_s.size());
  std::printf(
      "%15s  %zu joiners in waves of %u from %s s every %s s: %s s mean, %s s max = %s / %s x S/NIC; "
      "they read %s S from the trainers\n",
      "", r.joiner_s.size(), s.join_wave, fmt(s.join_start_s, 3).c_str(), fmt(s.join_every_s, 3).c_str(),
      fmt(mean, 3).c_str(), fmt(worst, 3).c_str(), fmt(mean / one, 3).c_str(), fmt(worst / one, 3).c_str(),
      fmt(r.joiner_trainer_bytes / s.model_bytes, 3).c_str());
}

}  // namespace

int cmd_sim(const Args& args) {
  SimFlags f;
  auto& s = f.s;
  auto& t = s.topo;
  double rpc_ms = 0;
  double hop_ms = 0;
  po::options_description desc(
      help_head("sim",
                "A flow-level simulator (virtual clock, max-min fair link sharing, pipelined relay at chunk\n"
                "granularity) of one trainer group publishing a model to N readers. The tensorhub method runs\n"
                "the REAL coordinator in-process with plan-based pulls (the product's default: a plan per\n"
                "reader, relay trees per stripe); tensorhub-chunk runs it with the per-chunk acquire protocol\n"
                "(one pipe per chunk read, so it is skipped when N x chunks exceeds --max-chunk-reads);\n"
                "the baselines: star, ring (NCCL-\n"
                "style pipelined ring), tree (pipelined binary tree), store (via --storage servers), ckpt (host\n"
                "copy at --pcie-gbps, then a pipelined ring). Presets: netsim (scripts/bench/fanout.sh's\n"
                "emulated cluster), standalone (scenario a: 64 trainer GPUs, 100 GiB, 8 x 400 Gb/s per host,\n"
                "racks of 16 hosts, spine oversubscribed 2:1), crossdc (scenario c: the same over 2 DCs with a\n"
                "100 Gb/s WAN), elastic (scenario b: standalone, 960 GPUs pull at t = 0 and 64 join in waves of 8\n"
                "every 50 ms from 100 ms; each joiner's time and the trainer bytes joiners cost), reshard (a TP=8\n"
                "trainer host, 16 GiB, readers in TP=2 rollout groups each pulling its own box: --reader-tp,\n"
                "--reshard-dim). Ratios are to the lower bound max(reader bytes/reader NIC, bytes wanted/trainer\n"
                "NICs, bytes wanted in DC 1/WAN).\n"));
  desc.add_options()("preset", po::value(&f.preset)->default_value(f.preset),
                     "netsim | standalone | crossdc | elastic | reshard")(
      "readers", po::value(&f.readers)->default_value(""), "comma-separated reader counts N")(
      "methods", po::value(&f.methods)->default_value(""), "tensorhub,tensorhub-chunk,star,ring,tree,store,ckpt")(
      "size", po::value(&f.size)->default_value(""), "model bytes S (e.g. 64MiB, 100GB)")(
      "chunk", po::value(&f.chunk)->default_value(""), "chunk bytes")(
      "trainers", po::value(&s.trainers)->default_value(1), "trainer GPUs (one shard each)")(
      "k", po::value(&s.max_readers_per_source)->default_value(2), "coordinator K: readers per source")(
      "plan-fanout", po::value(&s.plan_fanout)->default_value(s.plan_fanout),
      "tensorhub: children per source and stripe (CoordinatorConfig::plan_fanout, 1 = chains, <= --k)")(
      "plan-rails", po::value(&s.plan_rails)->default_value(s.plan_rails),
      "tensorhub: CoordinatorConfig::plan_rails (stripe s enters a host through GPU s mod N; 0 = GPUs per host, "
      "1 = no rails)")("inflight", po::value(&s.inflight)->default_value(s.inflight),
                       "tensorhub: reads in flight per reader")(
      "rpc-ms", po::value(&rpc_ms)->default_value(0), "tensorhub: control round trip (plan / acquire, complete), ms")(
      "hop-latency-ms", po::value(&hop_ms)->default_value(0),
      "tensorhub: what a relay hop adds beyond one chunk time (progress poll + read request queued\n"
      "behind bulk data; netsim's tc queues hold up to 25 ms each), ms")("dcs", po::value(&t.dcs)->default_value(1),
                                                                         "datacenters (1 or 2)")(
      "gpus-per-host", po::value(&t.gpus_per_host)->default_value(1), "GPUs (and NICs) per host")(
      "hosts-per-rack", po::value(&f.hosts_per_rack)->default_value(0), "hosts per rack (0 = one rack)")(
      "nic-gbps", po::value(&t.nic_gbps)->default_value(400), "per-GPU NIC, Gbit/s each way")(
      "nvlink-gbps", po::value(&t.nvlink_gbps)->default_value(t.nvlink_gbps), "per-GPU NVLink, Gbit/s each way")(
      "oversub", po::value(&t.oversub)->default_value(1), "spine oversubscription (rack uplink = NICs / this)")(
      "wan-gbps", po::value(&t.wan_gbps)->default_value(t.wan_gbps), "WAN between the 2 DCs, Gbit/s each way")(
      "storage", po::value(&t.storage)->default_value(0), "storage servers (store method)")(
      "storage-gbps", po::value(&t.storage_gbps)->default_value(400), "storage server NIC, Gbit/s")(
      "pcie-gbps", po::value(&s.pcie_gbps)->default_value(s.pcie_gbps), "ckpt: GPU -> host copy, Gbit/s")(
      "goodput", po::value(&t.goodput)->default_value(1), "payload share of the wire rate (netsim: 0.955, TCP/IP)")(
      "max-chunk-reads", po::value(&f.max_chunk_reads)->default_value(f.max_chunk_reads),
      "skip tensorhub-chunk when N x chunks is above this (per-chunk protocol cost)")(
      "joiners", po::value(&s.joiners)->default_value(s.joiners),
      "elastic joins (tensorhub only): the last J of the N readers arrive late, register and pull then")(
      "join-wave", po::value(&s.join_wave)->default_value(s.join_wave), "joiners arrive this many at a time")(
      "join-start-ms", po::value(&f.join_start_ms)->default_value(f.join_start_ms), "the first wave arrives then")(
      "join-every-ms", po::value(&f.join_every_ms)->default_value(f.join_every_ms), "one wave every this many ms")(
      "reader-tp", po::value(&s.reader_tp)->default_value(s.reader_tp),
      "resharding (tensorhub; 0 = whole model): reader i is TP rank i mod P and pulls only its box of\n"
      "the trainers' TP = --trainers layout; the baselines still move the whole model")(
      "reshard-dim", po::value(&s.reshard_dim)->default_value(s.reshard_dim),
      "with --reader-tp: 0 = column-parallel cut (a reader relays the trainer shards its box holds),\n"
      "1 = row-parallel (strided boxes: no relay)")("json", po::value(&f.json), "write the results to this JSON file");
  po::variables_map vm;
  if (!parse_options("sim", desc, args, vm)) return 0;
  apply_preset(f, vm);
  if (!(rpc_ms >= 0) || rpc_ms > 1e4) throw UserError("--rpc-ms must be in [0, 10000]");
  s.rpc_s = rpc_ms / 1e3;
  if (!(hop_ms >= 0) || hop_ms > 1e4) throw UserError("--hop-latency-ms must be in [0, 10000]");
  s.hop_latency_s = hop_ms / 1e3;
  if (!(f.join_start_ms >= 0) || !(f.join_every_ms >= 0) || f.join_start_ms > 1e7 || f.join_every_ms > 1e7) {
    throw UserError("--join-start-ms and --join-every-ms must be in [0, 1e7]");
  }
  if (s.join_wave == 0) throw UserError("--join-wave must be at least 1");
  sim::check_reshard(s);
  s.join_start_s = f.join_start_ms / 1e3;
  s.join_every_s = f.join_every_ms / 1e3;
  s.model_bytes = static_cast<double>(parse_bytes(f.size));
  s.chunk_bytes = static_cast<double>(parse_bytes(f.chunk));
  if (s.model_bytes <= 0 || s.chunk_bytes <= 0) throw UserError("--size and --chunk must be positive");
  const auto methods = split(f.methods);
  for (const auto& m : methods) {
    bool known = false;
    for (const auto& n : sim::method_names()) known |= n == m;
    if (!known)
      throw UserError("unknown method '" + m + "' (one of: tensorhub,tensorhub-chunk,star,ring,tree,store,ckpt)");
  }
  nlohmann::json runs = nlohmann::json::array();
  const double chunks = std::ceil(s.model_bytes / s.chunk_bytes);
  for (auto n : parse_list(f.readers)) {
    size_topology(f, n);
    std::printf(
        "tensorhub sim %s: N = %u readers, %u trainers, S = %s in %.0f chunks, %u DC(s), %u rack(s)/DC of %u "
        "hosts x %u GPUs, NIC %s Gbit/s%s\n",
        f.preset.c_str(), n, s.trainers, format_bytes(static_cast<std::uint64_t>(s.model_bytes)).c_str(), chunks, t.dcs,
        t.racks_per_dc, t.hosts_per_rack, t.gpus_per_host, fmt(t.nic_gbps, 1).c_str(),
        s.reader_tp == 0 ? ""
                         : (", readers TP=" + std::to_string(s.reader_tp) + " cut along dim " +
                            std::to_string(s.reshard_dim) + " (trainers TP=" + std::to_string(s.trainers) + ")")
                               .c_str());
    std::printf("%15s %9s %10s %7s %10s %9s %8s %8s %9s %9s %8s\n", "method", "protocol", "last s", "x LB", "mean s",
                "trainer/S", "spine/S", "WAN/S", "msgs/rd", "coord ms", "wall s");
    nlohmann::json mj = nlohmann::json::array();
    for (const auto& m : methods) {
      const bool coordinated = m == "tensorhub" || m == "tensorhub-chunk";
      if (m == "tensorhub-chunk" && n * chunks > f.max_chunk_reads) {
        std::printf("%15s  skipped: the per-chunk protocol needs N x chunks = %.0f reads (> --max-chunk-reads)\n",
                    m.c_str(), n * chunks);
        mj.push_back({{"method", m}, {"skipped", "per-chunk protocol: N x chunks above --max-chunk-reads"}});
        continue;
      }
      if (m == "store" && t.storage == 0) continue;
      const auto r = sim::run_method(m, s);
      const double S = s.model_bytes;
      std::printf("%15s %9s %10s %7s %10s %9s %8s %8s %9s %9s %8s\n", m.c_str(), r.protocol.c_str(),
                  fmt(r.last_s, 3).c_str(), fmt(r.last_s / r.lower_bound_s, 3).c_str(), fmt(r.mean_s, 3).c_str(),
                  fmt(r.trainer_bytes / S, 2).c_str(), fmt(r.spine_bytes / S, 2).c_str(),
                  fmt(r.wan_bytes / S, 2).c_str(),
                  coordinated ? fmt(static_cast<double>(r.control_msgs) / n, 1).c_str() : "-",
                  coordinated ? fmt(r.coord_cpu_s * 1e3, 1).c_str() : "-", fmt(r.wall_s, 2).c_str());
      if (!r.joiner_s.empty()) print_joiners(s, r);
      std::fflush(stdout);
      mj.push_back(result_json(r, S));
    }
    runs.push_back({{"readers", n},
                    {"trainers", s.trainers},
                    {"model_bytes", s.model_bytes},
                    {"chunk_bytes", s.chunk_bytes},
                    {"link_mbit", t.nic_gbps * 1e3},
                    {"topology",
                     {{"dcs", t.dcs},
                      {"racks_per_dc", t.racks_per_dc},
                      {"hosts_per_rack", t.hosts_per_rack},
                      {"gpus_per_host", t.gpus_per_host},
                      {"nic_gbps", t.nic_gbps},
                      {"oversub", t.oversub},
                      {"wan_gbps", t.wan_gbps},
                      {"storage", t.storage},
                      {"goodput", t.goodput}}},
                    {"k", s.max_readers_per_source},
                    {"plan_fanout", s.plan_fanout},
                    {"plan_rails", s.plan_rails},
                    {"rpc_ms", rpc_ms},
                    {"hop_latency_ms", hop_ms},
                    {"reader_tp", s.reader_tp},
                    {"reshard_dim", s.reshard_dim},
                    {"methods", mj}});
  }
  if (!f.json.empty()) {
    nlohmann::json j = {{"benchmark", "sim"}, {"preset", f.preset}, {"args", args}, {"runs", runs}};
    write_json_file(f.json, j);
    std::printf("wrote %s\n", f.json.c_str());
  }
  return 0;
}

}  // namespace tensorhub::cli
