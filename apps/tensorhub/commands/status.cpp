// tensorhub status: what the hub knows — models, versions, who holds them, pins, retention and
// snapshot files. Talks to the coordinator over gRPC; no MPI.
#include <unistd.h>

#include <boost/program_options.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <iostream>
#include <thread>

#include "common/command_table.hpp"
#include "common/commands.hpp"
#include "common/hub_state.hpp"
#include "common/options.hpp"
#include "common/report.hpp"
#include "tensorhub/core/error.hpp"
#include "tensorhub/core/units.hpp"

namespace tensorhub::cli {
namespace {

const char* state_name(coord::WorkerState s) {
  switch (s) {
    case coord::WorkerState::kAlive:
      return "alive";
    case coord::WorkerState::kSuspect:
      return "suspect";
    case coord::WorkerState::kDead:
      return "dead";
    case coord::WorkerState::kLeft:
      return "left";
  }
  return "?";
}

nlohmann::json workers_json(const std::vector<coord::WorkerStatus>& workers) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& w : workers) {
    out.push_back({{"worker", w.worker},
                   {"state", state_name(w.state)},
                   {"host", w.info.host},
                   {"rank", w.info.rank},
                   {"dc", w.info.dc},
                   {"transport", w.info.transport},
                   {"silent_ms", w.silent_ms},
                   {"reason", w.reason}});
  }
  return out;
}

// "850 ms", "12.3 s", "4 min", "3 h": how long, for people.
std::string human_ms(std::uint64_t ms) {
  if (ms < 1000) return std::to_string(ms) + " ms";
  if (ms < 120000) return fmt(static_cast<double>(ms) / 1000, 1) + " s";
  if (ms < 2 * 3600000ull) return std::to_string(ms / 60000) + " min";
  return std::to_string(ms / 3600000) + " h";
}

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", &tm);
  return buf;
}

// One line of counts, then a table of the workers that are not plainly alive (or of all).
void print_workers(const std::vector<coord::WorkerStatus>& workers, bool all) {
  std::size_t n[4] = {};
  for (const auto& w : workers) ++n[static_cast<int>(w.state)];
  std::printf("\nworkers: %zu alive, %zu suspect; recently gone: %zu dead, %zu left\n", n[0], n[1], n[2], n[3]);
  Table t({"worker", "state", "host", "rank", "paths", "silent", "reason"});
  for (const auto& w : workers) {
    if (!all && w.state == coord::WorkerState::kAlive) continue;
    const bool gone = w.state == coord::WorkerState::kDead || w.state == coord::WorkerState::kLeft;
    t.add({std::to_string(w.worker), state_name(w.state), w.info.host, std::to_string(w.info.rank),
           w.info.transport.empty() ? "-" : w.info.transport, human_ms(w.silent_ms) + (gone ? " ago" : ""),
           w.reason.empty() ? "-" : w.reason});
  }
  if (!t.empty()) t.print(stdout);
}

// "16", "48 (12 global)": published tensors, and the global tensors their boxes tile.
std::string tensors_text(const coord::VersionStatus& v) {
  if (!v.committed) return "-";
  std::string s = std::to_string(v.tensors);
  if (!v.global_tensors.empty()) s += " (" + std::to_string(v.global_tensors.size()) + " global)";
  return s;
}

std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

// --tensors: every global tensor of every committed version and the boxes that tile it.
void print_global_tensors(const std::vector<coord::ModelStatus>& models) {
  Table t({"model", "version", "global tensor", "dtype", "global shape", "boxes"});
  for (const auto& m : models) {
    for (const auto& v : m.versions) {
      for (const auto& g : v.global_tensors) {
        t.add({m.model, std::to_string(v.version), g.tensor.name, std::string(dtype_name(g.tensor.dtype)),
               shape_text(g.tensor.shape), std::to_string(g.boxes)});
      }
    }
  }
  std::printf("\n");
  if (t.empty()) {
    std::printf("no global tensors (every version holds plain tensors)\n");
    return;
  }
  t.print(stdout);
}

void print_versions(const std::vector<coord::ModelStatus>& models) {
  Table t({"model", "version", "state", "size", "tensors", "holders (publishers)", "pins", "retained", "snapshot"});
  for (const auto& m : models) {
    for (const auto& v : m.versions) {
      t.add({m.model, std::to_string(v.version), version_state(v), format_bytes(v.bytes), tensors_text(v),
             std::to_string(v.holders) + " (" + std::to_string(v.origin_holders) + ")", std::to_string(v.pins),
             v.retained ? "yes (" + std::to_string(v.retained) + ")" : "no", v.snapshot.empty() ? "-" : v.snapshot});
    }
  }
  if (t.empty()) {
    std::printf("no models\n");
    return;
  }
  t.print(stdout);
}

}  // namespace

int cmd_status(const Args& args) {
  std::string hub;
  double deadline = 5;
  bool json = false;
  bool holders = false;
  bool all_workers = false;
  bool tensors = false;
  double watch = 0;
  std::uint64_t count = 0;
  po::options_description desc(
      help_head("status",
                "Workers: suspect ones (silent for half the lease, or a failed read from them), and those that\n"
                "died (lease expired) or left recently; retained versions and their snapshot files.\n"));
  desc.add_options()("hub", po::value(&hub), "coordinator host:port (or TENSORHUB_HUB)")(
      "holders", po::bool_switch(&holders), "also list every holder of every version")(
      "workers", po::bool_switch(&all_workers), "list every worker (default: only suspect, dead and left ones)")(
      "tensors", po::bool_switch(&tensors),
      "also list the global tensors of every version (resharding: name, dtype, global shape, boxes tiling it)")(
      "rpc-deadline", po::value(&deadline)->default_value(deadline), "seconds to wait for the coordinator")(
      "json", po::bool_switch(&json), "print JSON instead of tables")(
      "watch", po::value(&watch)->default_value(watch),
      "redraw a compact table of versions and workers every this many seconds (0 = once)")(
      "count", po::value(&count)->default_value(count), "with --watch: stop after this many tables (0 = never)");
  po::variables_map vm;
  if (!parse_options("status", desc, args, vm)) return 0;
  if (watch < 0 || !std::isfinite(watch)) throw UserError("--watch must be a positive number of seconds");
  if (!vm["count"].defaulted() && watch == 0) throw UserError("--count needs --watch");
  if (json && watch > 0) throw UserError("--watch draws tables; it cannot be combined with --json");
  const auto client = connect_hub(hub, deadline);
  if (watch > 0) {
    // A compact table, redrawn in place on a terminal (appended otherwise), until interrupted.
    const bool tty = isatty(STDOUT_FILENO) == 1;
    for (std::uint64_t i = 0; count == 0 || i < count; ++i) {
      if (i > 0) std::this_thread::sleep_for(std::chrono::duration<double>(watch));
      const auto models = client->status();
      const auto workers = client->workers();
      if (tty) std::printf("\033[H\033[2J");
      std::printf("hub %s at %s (every %s s; Ctrl-C stops)\n", hub.c_str(), utc_now().c_str(), fmt(watch, 1).c_str());
      print_versions(models);
      print_workers(workers, all_workers);
      std::fflush(stdout);
    }
    return 0;
  }
  const auto models = client->status();
  const auto workers = client->workers();

  if (json) {
    nlohmann::json j{{"hub", hub}, {"models", nlohmann::json::array()}};
    for (const auto& m : models) {
      nlohmann::json jm{{"model", m.model}, {"versions", nlohmann::json::array()}};
      for (const auto& v : m.versions) {
        nlohmann::json jh = nlohmann::json::array();
        for (const auto& h : v.holder_list) {
          jh.push_back({{"worker", h.worker},
                        {"host", h.host},
                        {"rank", h.rank},
                        {"origin", h.origin},
                        {"withdrawn", h.withdrawn},
                        {"pins", h.pins},
                        {"chunks_held", h.chunks_held},
                        {"chunks_total", h.chunks_total}});
        }
        nlohmann::json js = nlohmann::json::array();
        for (const auto& seed : v.wan_seeds) js.push_back({{"dc", seed.dc}, {"worker", seed.worker}});
        nlohmann::json jg = nlohmann::json::array();
        for (const auto& g : v.global_tensors) {
          jg.push_back({{"name", g.tensor.name},
                        {"dtype", dtype_name(g.tensor.dtype)},
                        {"shape", g.tensor.shape},
                        {"boxes", g.boxes}});
        }
        jm["versions"].push_back({{"version", v.version},
                                  {"state", version_state(v)},
                                  {"committed", v.committed},
                                  {"readable", v.readable},
                                  {"retained", v.retained},
                                  {"holders", v.holders},
                                  {"origin_holders", v.origin_holders},
                                  {"pins", v.pins},
                                  {"bytes", v.bytes},
                                  {"snapshot", v.snapshot},
                                  {"holder_list", jh},
                                  {"wan_seeds", js},
                                  {"tensors", v.tensors},
                                  {"global_tensors", jg}});
      }
      j["models"].push_back(jm);
    }
    j["workers"] = workers_json(workers);
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  if (models.empty()) {
    std::printf("hub %s: no models\n", hub.c_str());
    print_workers(workers, all_workers);
    return 0;
  }
  std::printf("hub %s\n", hub.c_str());
  print_versions(models);
  if (holders) {
    Table h({"model", "version", "worker", "host", "rank", "role", "chunks", "pins", "withdrawn"});
    for (const auto& m : models) {
      for (const auto& v : m.versions) {
        for (const auto& x : v.holder_list) {
          h.add({m.model, std::to_string(v.version), std::to_string(x.worker), x.host, std::to_string(x.rank),
                 x.origin ? "publisher" : "relay", std::to_string(x.chunks_held) + "/" + std::to_string(x.chunks_total),
                 std::to_string(x.pins), x.withdrawn ? "yes" : "no"});
        }
      }
    }
    std::printf("\n");
    h.print(stdout);
  }
  if (tensors) print_global_tensors(models);
  print_workers(workers, all_workers);
  return 0;
}

}  // namespace tensorhub::cli
