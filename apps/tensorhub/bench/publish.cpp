// tensorhub bench publish: what one publish costs the trainer. On one rank, per size S (the
// model in --tensors tensors of one arena), every method in the same run:
//   memcpy          one copy of S (what a store that keeps a copy pays per version; the baseline;
//                   device_copy, a device-to-device copy, with --memory cuda)
//   xxh3_1thread    XXH3-64 of S per chunk on the calling thread (what publish cost the caller
//                   before the checksums moved off its thread)
//   publish         Hub::publish: returns once the coordinator has the shard (checksums on
//                   --hash-threads threads)
//   publish_async   Hub::publish_async: "call" is the caller's stall (validate, lay out, expose;
//                   no byte read), "commit" the time until the coordinator accepted the shard
// Each publish is followed by unpublish (not timed). Copies: none (the hub exposes the arena).
#include <mpi.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <chrono>
#include <cstring>
#include <map>
#include <vector>

#include "bench/flags.hpp"
#include "bench/launch_flags.hpp"
#include "common/command_table.hpp"
#include "common/options.hpp"
#include "common/report.hpp"
#include "tensorhub/core/checksum.hpp"
#include "tensorhub/core/shard_hash.hpp"
#include "tensorhub/core/units.hpp"
#include "tensorhub/hub.hpp"

namespace po = boost::program_options;

namespace tensorhub::cli {
namespace {

using Clock = std::chrono::steady_clock;

struct PublishConfig {
  bench::SweepFlags sweep{"1GiB", 7, 2};
  std::string chunk = "4MiB";
  std::uint32_t tensors = 16;
  std::uint32_t hash_threads = 0;
  std::string transport = "auto";
  std::string memory = "host";
  std::string json;
};

double ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }
double ms(std::chrono::microseconds d) { return static_cast<double>(d.count()) / 1e3; }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Samples {
  std::vector<double> call_ms;
  std::vector<double> commit_ms;
  unsigned hash_threads = 0;
};

int run_publish_bench(const PublishConfig& c, const Args& args, int rank) {
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size != 1) throw UserError("bench publish runs on one rank (mpirun -n 1); got " + std::to_string(size));
  const std::uint64_t chunk = parse_bytes(c.chunk);
  nlohmann::json results = nlohmann::json::array();
  Table table({"bytes", "method", "threads", "caller ms (median)", c.memory == "cuda" ? "vs device_copy" : "vs memcpy",
               "commit ms (median)"});
  std::uint64_t version = 0;
  for (const std::uint64_t bytes : c.sweep.sizes()) {
    const std::uint64_t per = std::max<std::uint64_t>(4096, bytes / c.tensors / 4096 * 4096);
    const std::uint64_t total = per * c.tensors;
    HubOptions opt;
    opt.transport = c.transport;
    opt.chunk_bytes = chunk;
    opt.hash_threads = c.hash_threads;
    const bool on_device = c.memory == "cuda";
    if (on_device) opt.device = "auto";  // a GPU, or the emulated device (TENSORHUB_DEVICE)
    const bool mpi_rma = c.transport == "auto" || c.transport.find("mpi_rma") != std::string::npos;
    const bool pooled = !on_device && mpi_rma;
    if (pooled) opt.pool_bytes = total + 4096;
    if (on_device && mpi_rma) opt.pool_bytes = 1 << 20;  // a pool window (unused), not a dynamic one
    auto hub = Hub::join(MPI_COMM_WORLD, opt);
    if (on_device && rank == 0) std::printf("# tensors in device memory of the %s\n", hub->device_name().c_str());
    std::vector<unsigned char> own;
    std::vector<unsigned char> pattern(total);
    for (std::uint64_t i = 0; i < total; i += 8) std::memcpy(pattern.data() + i, &i, 8);
    unsigned char* arena = nullptr;
    unsigned char* copy_dev = nullptr;
    if (on_device) {
      arena = static_cast<unsigned char*>(hub->allocate_device(total));
      copy_dev = static_cast<unsigned char*>(hub->allocate_device(total));
      hub->copy_memory(arena, MemoryKind::kCuda, pattern.data(), MemoryKind::kHost, total);
    } else {
      arena = static_cast<unsigned char*>(pooled ? hub->allocate(total) : (own.resize(total), own.data()));
      std::memcpy(arena, pattern.data(), total);
    }
    const MemoryKind kind = on_device ? MemoryKind::kCuda : MemoryKind::kHost;
    std::vector<Tensor> ts;
    for (std::uint32_t t = 0; t < c.tensors; ++t) {
      auto x = host_tensor("t" + std::to_string(t), DType::kU8, {static_cast<std::int64_t>(per)}, arena + t * per);
      x.memory = kind;
      ts.push_back(x);
    }
    std::vector<unsigned char> copy(total, 1);
    const std::string baseline = on_device ? "device_copy" : "memcpy";
    std::map<std::string, Samples> s;
    std::uint64_t sink = 0;
    for (std::uint32_t i = 0; i < c.sweep.warmup + c.sweep.iters; ++i) {
      const bool timed = i >= c.sweep.warmup;
      auto t0 = Clock::now();
      if (on_device) {
        hub->copy_memory(copy_dev, MemoryKind::kCuda, arena, MemoryKind::kCuda, total);  // device to device
      } else {
        std::memcpy(copy.data(), arena, total);
      }
      if (timed) s[baseline].call_ms.push_back(ms(Clock::now() - t0));
      if (!on_device) {  // the host never reads device memory
        t0 = Clock::now();
        for (std::uint64_t off = 0; off < total; off += chunk) {
          sink ^= checksum64(ChecksumAlgorithm::kXxh3_64, arena + off, std::min(chunk, total - off));
        }
        if (timed) s["xxh3_1thread"].call_ms.push_back(ms(Clock::now() - t0));
      }
      t0 = Clock::now();
      const auto r = hub->publish("bench", ++version, ts);
      const auto sync_ms = ms(Clock::now() - t0);
      hub->unpublish("bench", version);
      t0 = Clock::now();
      auto h = hub->publish_async("bench", ++version, ts);
      const auto async_call_ms = ms(Clock::now() - t0);
      const auto ra = h.result();
      hub->unpublish("bench", version);
      if (!r.committed || !ra.committed) throw ContractViolation("bench publish: a one-rank publish did not commit");
      if (!timed) continue;
      s["publish"].call_ms.push_back(sync_ms);
      s["publish"].commit_ms.push_back(ms(r.commit));
      s["publish"].hash_threads = r.hash_threads;
      s["publish_async"].call_ms.push_back(async_call_ms);
      s["publish_async"].commit_ms.push_back(ms(ra.commit));
      s["publish_async"].hash_threads = ra.hash_threads;
    }
    if (sink == 42) std::printf(" ");  // keeps the checksum loop
    const double memcpy_ms = median(s[baseline].call_ms);
    for (const std::string& m :
         {baseline, std::string("xxh3_1thread"), std::string("publish"), std::string("publish_async")}) {
      if (s.count(m) == 0) continue;
      const auto& x = s[m];
      const double call = median(x.call_ms);
      const bool has_commit = !x.commit_ms.empty();
      const double commit = has_commit ? median(x.commit_ms) : 0;
      const unsigned threads = x.hash_threads != 0 ? x.hash_threads : 1;
      table.add({format_bytes(total), m, std::to_string(threads), fmt(call, 3), fmt(call / memcpy_ms, 4),
                 has_commit ? fmt(commit, 2) : "-"});
      nlohmann::json row{{"bytes", total},           {"method", m},
                         {"threads", threads},       {"caller_ms", x.call_ms},
                         {"median_caller_ms", call}, {"ratio_baseline", call / memcpy_ms}};
      if (has_commit) {
        row["commit_ms"] = x.commit_ms;
        row["median_commit_ms"] = commit;
      }
      results.push_back(row);
    }
    if (pooled || on_device) hub->deallocate(arena);
    if (on_device) hub->deallocate(copy_dev);
    hub->close();
  }
  std::string cmd = "mpirun -n 1" + bench::mpirun_flags_seen() + " tensorhub bench publish";
  for (const auto& a : args) cmd += " " + a;
  if (rank == 0) {
    std::printf("# %s\n", cmd.c_str());
    std::printf(
        "# this rank may run on %u CPU(s) (its affinity mask: mpirun binds a rank to one core unless "
        "--bind-to none/socket)\n",
        usable_cpus());
    table.print(stdout);
    nlohmann::json j{{"benchmark", "publish"},       {"command", cmd},           {"chunk_bytes", chunk},
                     {"tensors", c.tensors},         {"transport", c.transport}, {"iterations", c.sweep.iters},
                     {"usable_cpus", usable_cpus()}, {"memory", c.memory},       {"results", results}};
    std::printf("%s\n", j.dump().c_str());
    if (!c.json.empty()) write_json_file(c.json, j);
  }
  return 0;
}

}  // namespace

int cmd_bench_publish(const Args& args) {
  PublishConfig c;
  po::options_description desc(help_head(
      "bench publish",
      "What a publish costs the trainer's thread, on one rank, with memcpy of the same bytes as the baseline "
      "in the same run. Methods: memcpy; xxh3_1thread (the checksum pass on the caller's thread); publish "
      "(returns once the coordinator has the shard); publish_async (returns after validate + expose: the "
      "stall; 'commit' is when the coordinator accepted the shard). Each publish is unpublished again. Prints "
      "a table and one JSON line.\n"));
  c.sweep.add_to(desc, {.iters = "timed rounds per size (median reported)", .warmup = "untimed rounds first"});
  desc.add_options()("chunk", po::value(&c.chunk)->default_value(c.chunk), "chunk size (checksums per chunk)")(
      "tensors", po::value(&c.tensors)->default_value(c.tensors), "tensors the model is cut into")(
      "hash-threads", po::value(&c.hash_threads)->default_value(c.hash_threads),
      "HubOptions::hash_threads (0: min(4, CPUs in this rank's affinity mask))")(
      "transport", po::value(&c.transport)->default_value(c.transport),
      "data paths of the hub (auto and mpi_rma: the tensors come from its registered pool)")(
      "memory", po::value(&c.memory)->default_value(c.memory),
      "host, or cuda: the tensors in device memory (a GPU, else the emulated device: then the figures are "
      "CPU figures), the baseline a device-to-device copy, checksums on the device")(
      "json", po::value(&c.json), "also write the JSON to this file");
  po::variables_map vm;
  if (!parse_options("bench", desc, args, vm)) return 0;
  c.sweep.resolve(vm);
  if (c.sweep.iters == 0) throw UserError("-n/--iters must be at least 1");
  if (c.tensors == 0) throw UserError("--tensors must be at least 1");
  if (parse_bytes(c.chunk) == 0) throw UserError("--chunk must be positive");
  if (c.memory != "host" && c.memory != "cuda")
    throw UserError("--memory: expected host or cuda, got '" + c.memory + "'");
  return run_mpi_command("bench", [&](int rank) { return run_publish_bench(c, args, rank); });
}

}  // namespace tensorhub::cli
