// tensorhub demo: one MPI job = coordinator (rank 0) + a trainer group + rollout ranks.
// The trainer group publishes N versions of a synthetic model (each rank one shard, two
// buffers used in turn so a version stays untouched while the next is computed); each rollout
// pulls `latest` every step, verifies it and becomes a relay for the ranks behind it. With
// --prefetch a rollout keeps two buffer sets: it pulls the new version asynchronously into the
// spare one (Hub::pull_async) while it "generates" with the one it holds (verifies it), then
// swaps; the stall is only the wait left after generation.
#include <mpi.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <chrono>
#include <cstdio>
#include <iostream>

#include "common/command_table.hpp"
#include "common/commands.hpp"
#include "common/memory.hpp"
#include "common/options.hpp"
#include "common/report.hpp"
#include "common/synthetic.hpp"
#include "common/trace_merge.hpp"
#include "tensorhub/core/units.hpp"
#include "tensorhub/hub.hpp"
#include "tensorhub/mpi/mpi.hpp"

namespace po = boost::program_options;

namespace tensorhub::cli {
namespace {

struct DemoConfig {
  std::string size = "512MiB";
  std::uint32_t tensors = 40;
  std::uint32_t versions = 3;
  std::uint32_t trainers = 2;
  std::string chunk = "4MiB";
  std::uint32_t max_readers = 2;
  std::string json;
  std::string trace;
  bool verify = true;
  bool prefetch = false;
  std::string memory = "host";
};

// Per rollout and version: seconds, bytes, origin bytes, relay bytes, version read, stall (the
// wait for the weights after generation: the whole pull without --prefetch), the pull's stages
// (resolve, transfer, no source, verify); per trainer and version: its publish call's seconds and
// wall-clock start and end (the version commits with the last shard).
constexpr int kFields = 13;

double wall_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

int run_demo(const DemoConfig& c, int rank) {
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size < static_cast<int>(c.trainers) + 2) {
    throw UserError("demo needs at least " + std::to_string(c.trainers + 2) + " ranks (1 coordinator, " +
                    std::to_string(c.trainers) + " trainers, >=1 rollout); got " + std::to_string(size));
  }
  const bool trainer = rank >= 1 && rank <= static_cast<int>(c.trainers);
  const bool rollout = rank > static_cast<int>(c.trainers);
  const int rollouts = size - 1 - static_cast<int>(c.trainers);

  const auto specs = synthetic_model(parse_bytes(c.size), c.tensors);
  std::uint64_t model_bytes = 0;
  for (const auto& s : specs) model_bytes += s.bytes();
  // Trainer shards: tensor i belongs to trainer rank i % trainers.
  std::vector<TensorSpec> shard;
  for (std::size_t i = 0; trainer && i < specs.size(); ++i) {
    if (i % c.trainers == static_cast<std::size_t>(rank - 1)) shard.push_back(specs[i]);
  }

  HubOptions opt;
  opt.chunk_bytes = parse_bytes(c.chunk);
  opt.max_readers_per_source = c.max_readers;
  opt.trace_path = c.trace;
  const bool on_device = parse_memory(c.memory) == MemoryKind::kCuda;
  opt.device = device_for(parse_memory(c.memory));
  // Registered memory: trainers hold two copies of their shard, rollouts one model (two with
  // --prefetch).
  const std::uint64_t rollout_sets = c.prefetch ? 2 : 1;
  opt.pool_bytes = trainer ? 2 * Arena::bytes_needed(shard) : rollout ? rollout_sets * Arena::bytes_needed(specs) : 0;
  auto hub = Hub::join(MPI_COMM_WORLD, opt);
  mpi::Comm trainers = mpi::Comm::split(MPI_COMM_WORLD, trainer ? 0 : MPI_UNDEFINED, rank);
  if (rank == 0) {
    std::printf(
        "tensorhub demo: %d ranks (coordinator 0, trainers 1-%u, rollouts %u-%d), model %s in %zu bf16 tensors, "
        "chunk %s, coordinator %s\n",
        size, c.trainers, c.trainers + 1, size - 1, format_bytes(model_bytes).c_str(), specs.size(), c.chunk.c_str(),
        hub->coordinator_address().c_str());
  }

  // Two arenas used in turn, so a version stays untouched while the next one is computed.
  std::vector<Arena> arenas;
  if (trainer) {
    arenas.emplace_back(shard, hub->allocate(Arena::bytes_needed(shard)));
    arenas.emplace_back(shard, hub->allocate(Arena::bytes_needed(shard)));
  }
  std::vector<Arena> sets;  // a rollout's buffer sets: the one in use, then the spare one
  for (std::uint64_t i = 0; rollout && i < rollout_sets; ++i) {
    sets.emplace_back(specs, hub->allocate(Arena::bytes_needed(specs)));
    sets.back().clear();  // fault the pages in before timing
  }
  std::size_t cur = 0;
  // --memory cuda: trainers publish and rollouts pull device copies of the arenas and sets (the
  // pattern is written and checked on the host side, copied over).
  std::vector<DeviceMirror> arena_dev;
  std::vector<DeviceMirror> set_dev;
  if (on_device) {
    for (const auto& a : arenas) arena_dev.emplace_back(*hub, a);
    for (const auto& a : sets) set_dev.emplace_back(*hub, a);
    if (rank == 0) std::printf("tensors in device memory of the %s\n", hub->device_name().c_str());
  }
  const auto rollout_tensors = [&](std::size_t i) { return on_device ? set_dev[i].tensors() : sets[i].tensors(); };
  const auto held_matches = [&](std::size_t i, std::uint64_t v) {
    if (on_device) set_dev[i].download(sets[i]);
    return sets[i].matches(v);
  };

  std::vector<double> mine(static_cast<std::size_t>(kFields) * c.versions, 0.0);
  std::optional<std::uint64_t> last;
  for (std::uint32_t step = 1; step <= c.versions; ++step) {
    if (trainer) {
      Arena& a = arenas[step % 2];
      a.fill(step);
      if (on_device) arena_dev[step % 2].upload(a);
      double* f = &mine[(step - 1) * kFields];
      const auto tp = std::chrono::steady_clock::now();
      f[11] = wall_seconds();
      hub->publish("policy", step, on_device ? arena_dev[step % 2].tensors() : a.tensors(),
                   Group::of(trainers.get(), "trainer"));
      f[10] = std::chrono::duration<double>(std::chrono::steady_clock::now() - tp).count();
      f[12] = wall_seconds();
      if (step > 1) hub->unpublish("policy", step - 1);  // waits for readers of step-1
    }
    if (rollout) {
      if (!hub->wait_for("policy", last, std::chrono::seconds(120))) {
        throw TimeoutError("no new version of 'policy' within 120 s");
      }
      PullOptions po;
      po.verify = c.verify;
      PullResult r;
      double stall = 0;
      if (c.prefetch) {
        const std::size_t next = 1 - cur;
        auto h = hub->pull_async("policy", Version::latest(), rollout_tensors(next), po);
        // "Generation" with the weights held (from step 2 on) while the spare set fills.
        if (last && !held_matches(cur, *last)) throw ChecksumError("rollout's current weights changed under it");
        const auto wait_start = std::chrono::steady_clock::now();
        r = h.result();
        stall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wait_start).count();
        cur = next;  // swap at the step boundary; the old set keeps relaying until reused
      } else {
        r = hub->pull("policy", Version::latest(), rollout_tensors(cur), po);
        stall = r.seconds;
      }
      if (!held_matches(cur, r.version))
        throw ChecksumError("rollout read a version whose contents do not match its stamp");
      last = r.version;
      double* f = &mine[(step - 1) * kFields];
      f[5] = stall;
      f[0] = r.seconds;
      f[1] = static_cast<double>(r.bytes);
      f[2] = static_cast<double>(r.origin_bytes);
      f[3] = static_cast<double>(r.relay_bytes);
      f[4] = static_cast<double>(r.version);
      f[6] = r.resolve_seconds;
      f[7] = r.transfer_seconds;
      f[8] = r.no_source_seconds;
      f[9] = r.verify_seconds;
    }
    mpi::sleepy_barrier(MPI_COMM_WORLD);  // one training step per round
  }

  std::vector<double> all(rank == 0 ? mine.size() * static_cast<std::size_t>(size) : 0);
  mpi::check(MPI_Gather(mine.data(), static_cast<int>(mine.size()), MPI_DOUBLE, all.data(),
                        static_cast<int>(mine.size()), MPI_DOUBLE, 0, MPI_COMM_WORLD),
             "MPI_Gather(demo results)");
  hub->close();
  merge_job_trace(MPI_COMM_WORLD, c.trace);
  if (rank != 0) return 0;

  std::vector<std::string> headers{"version", "bytes"};
  for (int r = 0; r < rollouts; ++r) headers.push_back("rank" + std::to_string(c.trainers + 1 + r) + " s (GB/s)");
  headers.insert(headers.end(), {"trainer sent", "relayed"});
  Table table(headers);
  nlohmann::json j;
  j["command"] = "mpirun -n " + std::to_string(size) + " --mca osc ucx tensorhub demo --size " + c.size +
                 " --tensors " + std::to_string(c.tensors) + " --versions " + std::to_string(c.versions);
  j["model_bytes"] = model_bytes;
  j["ranks"] = size;
  j["trainers"] = c.trainers;
  j["chunk_bytes"] = opt.chunk_bytes;
  j["steps"] = nlohmann::json::array();
  for (std::uint32_t s = 0; s < c.versions; ++s) {
    double origin = 0;
    double relay = 0;
    std::vector<std::string> row{std::to_string(s + 1), format_bytes(model_bytes)};
    nlohmann::json js{{"step", s + 1}, {"pulls", nlohmann::json::array()}};
    // Publish: the slowest shard's call and the commit latency, from the first shard's call to
    // the last shard's return (hosts' wall clocks).
    double slowest = 0;
    double first_in = 1e300;
    double last_out = 0;
    for (std::uint32_t t = 1; t <= c.trainers; ++t) {
      const double* f = &all[static_cast<std::size_t>(t) * mine.size() + s * kFields];
      slowest = std::max(slowest, f[10]);
      first_in = std::min(first_in, f[11]);
      last_out = std::max(last_out, f[12]);
    }
    js["publish"] = {{"publish_ms", slowest * 1e3}, {"commit_ms", (last_out - first_in) * 1e3}};
    const auto u = [](double x) { return static_cast<std::uint64_t>(x); };  // exact below 2^53
    for (int r = 0; r < rollouts; ++r) {
      const double* f = &all[static_cast<std::size_t>(c.trainers + 1 + r) * mine.size() + s * kFields];
      origin += f[2];
      relay += f[3];
      row.push_back(fmt(f[0], 3) + " (" + fmt(f[1] / f[0] / 1e9, 2) + ")");
      js["pulls"].push_back(
          {{"rank", c.trainers + 1 + r},
           {"version", static_cast<std::uint64_t>(f[4])},
           {"seconds", f[0]},
           {"bytes", u(f[1])},
           {"gbps", f[1] / f[0] / 1e9},
           {"origin_bytes", u(f[2])},
           {"relay_bytes", u(f[3])},
           {"stall_s", f[5]},
           {"stages", {{"resolve_s", f[6]}, {"transfer_s", f[7]}, {"no_source_s", f[8]}, {"verify_s", f[9]}}}});
    }
    row.push_back(format_bytes(static_cast<std::uint64_t>(origin)));
    row.push_back(format_bytes(static_cast<std::uint64_t>(relay)));
    js["trainer_bytes_sent"] = u(origin);
    js["relayed_bytes"] = u(relay);
    j["steps"].push_back(js);
    table.add(row);
  }
  table.print(stdout);
  if (c.prefetch) {
    double pulls = 0;
    double stalls = 0;
    for (int r = 0; r < rollouts; ++r) {
      for (std::uint32_t s = 0; s < c.versions; ++s) {
        const double* f =
            &all[static_cast<std::size_t>(c.trainers + 1 + r) * mine.size() + static_cast<std::size_t>(s) * kFields];
        pulls += f[0];
        stalls += f[5];
      }
    }
    std::printf(
        "prefetch: rollouts pulled into a spare buffer set while generating with the one they held; "
        "waited %s s after generation in all, for %s s of pulls\n",
        fmt(stalls, 3).c_str(), fmt(pulls, 3).c_str());
    j["prefetch"] = {{"stall_s", stalls}, {"pull_s", pulls}};
  }
  std::printf("every pull verified: per-chunk xxHash64 and the version stamp of each tensor\n");
  if (!c.json.empty()) {
    write_json_file(c.json, j);
    std::printf("wrote %s\n", c.json.c_str());
  }
  return 0;
}

}  // namespace

int cmd_demo(const Args& args) {
  DemoConfig c;
  po::options_description desc(help_head(
      "demo", "Ranks: 0 = coordinator, 1..T = trainer group, the rest = rollouts (one reading group each).\n"));
  bool no_verify = false;
  desc.add_options()("size", po::value(&c.size)->default_value(c.size), "model size (e.g. 512MiB, 1GiB)")(
      "tensors", po::value(&c.tensors)->default_value(c.tensors), "about this many tensors")(
      "versions", po::value(&c.versions)->default_value(c.versions), "versions to publish")(
      "trainers", po::value(&c.trainers)->default_value(c.trainers), "trainer ranks (one shard each)")(
      "chunk", po::value(&c.chunk)->default_value(c.chunk), "transfer chunk size")(
      "max-readers", po::value(&c.max_readers)->default_value(c.max_readers), "concurrent readers per source (K)")(
      "no-verify", po::bool_switch(&no_verify), "skip checksum verification (relays still verify)")(
      "prefetch", po::bool_switch(&c.prefetch),
      "rollouts pull_async into a spare buffer set while generating with the held one, then swap")(
      "json", po::value(&c.json), "also write the results as JSON to this file")(
      "memory", po::value(&c.memory)->default_value(c.memory), kMemoryHelp)(
      "trace", po::value(&c.trace),
      "write a Chrome trace-event JSON timeline of every rank to this file (ui.perfetto.dev)");
  po::variables_map vm;
  if (!parse_options("demo", desc, args, vm)) return 0;
  c.verify = !no_verify;
  parse_bytes(c.size);  // bad values fail here, before MPI starts
  parse_bytes(c.chunk);
  if (c.versions == 0 || c.trainers == 0) throw UserError("--versions and --trainers must be at least 1");
  if (c.max_readers == 0) throw UserError("--max-readers must be at least 1");
  check_synthetic_tensors(c.tensors);
  parse_memory(c.memory);
  return run_mpi_command("demo", [&](int rank) { return run_demo(c, rank); });
}

}  // namespace tensorhub::cli
