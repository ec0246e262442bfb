// tensorhub bench coordinator: coordinator load without data (bench/coord_load.hpp). R reader
// threads and one publisher against one coordinator, in-process and (--grpc) over a GrpcServer
// on loopback in this process; per mode (acquire: chunk by chunk, the old protocol, capped in
// time; plan: plan-based pulls) and R: coordinator CPU per version, control RPCs per reader per
// version, RPC/s and p50/p99 latency. Acquire runs that hit the budget are extrapolated to the
// whole version (marked "extrapolated"). Not an MPI command.
#include <boost/program_options.hpp>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>

#include "bench/coord_load.hpp"
#include "common/command_table.hpp"
#include "common/commands.hpp"
#include "common/options.hpp"
#include "common/report.hpp"
#include "tensorhub/core/error.hpp"

namespace po = boost::program_options;

namespace tensorhub::cli {
namespace {

using namespace bench;

std::vector<std::uint32_t> parse_list(const std::string& text, const char* flag) {
  std::vector<std::uint32_t> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    try {
      const auto v = std::stoul(item);
      if (v == 0 || v > 65536) throw std::out_of_range("range");
      out.push_back(static_cast<std::uint32_t>(v));
    } catch (const std::exception&) {
      throw UserError(std::string(flag) + ": '" + item + "' is not a count in 1..65536");
    }
  }
  if (out.empty()) throw UserError(std::string(flag) + " is empty");
  return out;
}

}  // namespace

int cmd_bench_coordinator(const Args& args) {
  std::string readers = "16,64";
  std::string modes = "acquire,plan";
  std::string json;
  std::uint32_t acquire_ms = 1000;
  bool grpc = false;
  LoadConfig base;
  base.chunks = 25600;
  po::options_description desc(help_head(
      "bench coordinator",
      "R reader threads pull one version (no data) from one in-process coordinator, and with --grpc also over\n"
      "gRPC on 127.0.0.1: coordinator CPU per version, RPCs per reader per version, RPC/s, p99 latency.\n"
      "Not an MPI command.\n"));
  desc.add_options()("readers", po::value(&readers)->default_value(readers), "comma-separated reader counts R")(
      "chunks", po::value(&base.chunks)->default_value(base.chunks), "chunks of the version (4 MiB each, nominally)")(
      "tensors", po::value(&base.tensors)->default_value(base.tensors), "tensors of the version")(
      "max-readers", po::value(&base.k)->default_value(base.k),
      "K: concurrent readers one source serves (serve --max-readers)")(
      "plan-fanout", po::value(&base.fanout)->default_value(base.fanout),
      "plan mode: children per source and stripe (serve --plan-fanout; 1 = chains)")(
      "modes", po::value(&modes)->default_value(modes), "comma-separated: acquire,plan")(
      "acquire-ms", po::value(&acquire_ms)->default_value(acquire_ms),
      "acquire mode: each reader stops after this long (then extrapolated)")(
      "batch", po::value(&base.batch)->default_value(base.batch), "acquire mode: chunks asked per call")(
      "grpc", po::bool_switch(&grpc), "also over gRPC on loopback")("json", po::value(&json)->default_value(json),
                                                                    "result file");
  po::variables_map vm;
  if (!parse_options("bench", desc, args, vm)) return 0;
  const auto counts = parse_list(readers, "--readers");
  std::vector<LoadMode> which;
  for (std::stringstream in(modes); !in.eof();) {
    std::string m;
    std::getline(in, m, ',');
    if (m == "plan")
      which.push_back(LoadMode::kPlan);
    else if (m == "acquire")
      which.push_back(LoadMode::kAcquire);
    else
      throw UserError("--modes: '" + m + "' is not acquire or plan");
  }
  if (base.chunks == 0 || base.tensors == 0) throw UserError("--chunks and --tensors must be > 0");
  base.budget = std::chrono::milliseconds(acquire_ms);

  Table table(
      {"mode", "transport", "R", "chunks", "RPC/reader", "RPC/s", "p50 us", "p99 us", "coord CPU/version s", "note"});
  nlohmann::json runs = nlohmann::json::array();
  for (const bool over_grpc : grpc ? std::vector<bool>{false, true} : std::vector<bool>{false}) {
    for (const auto mode : which) {
      for (const auto r : counts) {
        LoadConfig c = base;
        c.mode = mode;
        c.grpc = over_grpc;
        c.readers = r;
        if (mode == LoadMode::kPlan) c.budget = std::chrono::milliseconds(600000);
        const auto res = run_load(c);
        const char* note = res.complete ? "" : "extrapolated";
        table.add({to_string(mode), over_grpc ? "grpc" : "in-process", std::to_string(r), std::to_string(c.chunks),
                   fmt(res.calls_per_reader(r), 1), fmt(res.rpc_per_s(), 0), fmt(res.p50_us, 1), fmt(res.p99_us, 1),
                   fmt(res.cpu_per_version_s(), 4), note});
        runs.push_back({{"mode", to_string(mode)},
                        {"transport", over_grpc ? "grpc" : "in-process"},
                        {"readers", r},
                        {"chunks", c.chunks},
                        {"tensors", c.tensors},
                        {"max_readers_per_source", c.k},
                        {"plan_fanout", c.fanout},
                        {"calls", res.calls},
                        {"chunks_done", res.chunks_done},
                        {"complete", res.complete},
                        {"wall_s", res.wall_s},
                        {"coord_cpu_s", res.coord_cpu_s},
                        {"coord_cpu_per_version_s", res.cpu_per_version_s()},
                        {"rpc_per_reader_per_version", res.calls_per_reader(r)},
                        {"rpc_per_s", res.rpc_per_s()},
                        {"p50_us", res.p50_us},
                        {"p99_us", res.p99_us}});
        std::fflush(stdout);
      }
    }
  }
  table.print(stdout);
  if (!json.empty()) {
    write_json_file(json, {{"benchmark", "coordinator"}, {"runs", runs}});
    std::printf("wrote %s\n", json.c_str());
  }
  return 0;
}

}  // namespace tensorhub::cli
