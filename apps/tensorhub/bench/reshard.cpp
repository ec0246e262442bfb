// tensorhub bench reshard: a rollout rank pulls its tensor-parallel box of a model that a trainer
// holds cut into --from boxes per tensor, against pulling the same bytes unsliced, in one run
// (ratios, not absolute times; README "Resharding"):
//   plain  the reader's bytes published as plain tensors of its box's shape (the baseline)
//   dim0   the model cut along dim 0 (column-parallel TP, FSDP); the reader pulls box 0 of --to
//          along dim 0: one contiguous range per source box
//   dim1   cut along dim 1 (row-parallel TP); the reader's box along dim 1: strided rows
// 2 ranks: rank 0 holds every box of the trainer (one shard, --from boxes per tensor), rank 1
// reads. Methods alternate within each iteration. Every element of the last dim0 and dim1 pulls
// is checked against the trainer's pattern.
#include <mpi.h>
#include <sys/resource.h>

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
#include "tensorhub/core/box.hpp"
#include "tensorhub/core/units.hpp"
#include "tensorhub/hub.hpp"
#include "tensorhub/mpi/mpi.hpp"

namespace po = boost::program_options;

namespace tensorhub::cli {
namespace {

using Clock = std::chrono::steady_clock;

struct ReshardConfig {
  bench::SweepFlags sweep{"256MiB", 5, 1};
  std::uint32_t tensors = 8;
  std::int64_t cols = 4096;
  std::int64_t from = 8;
  std::int64_t to = 2;
  std::string chunk = "4MiB";
  std::uint32_t inflight = 8;
  std::string transport = "mpi_rma";
  bool scatter = true;  // HubOptions::scatter_reads
  std::string json;
};

std::uint16_t pattern(std::uint64_t t, std::int64_t r, std::int64_t c) {
  return static_cast<std::uint16_t>(t * 131 + static_cast<std::uint64_t>(r) * 7 + static_cast<std::uint64_t>(c) * 3);
}

void fill(std::uint64_t t, const Box& b, std::uint16_t* out) {
  for (std::int64_t r = 0; r < b.extent[0]; ++r) {
    for (std::int64_t c = 0; c < b.extent[1]; ++c)
      out[r * b.extent[1] + c] = pattern(t, b.offset[0] + r, b.offset[1] + c);
  }
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double peak_rss_mib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;
}

struct Method {
  std::string name;
  std::uint64_t version = 0;
  std::vector<Tensor> into;  // the reader's destinations
  std::vector<std::vector<std::uint16_t>> buffers;
  std::vector<Box> boxes;  // the reader's box of each tensor
  std::vector<double> seconds;
  PullResult last;
};

int run_reshard(const ReshardConfig& c, const Args& args, int rank) {
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size != 2)
    throw UserError("bench reshard needs exactly 2 ranks (trainer and reader); got " + std::to_string(size));
  setenv("TENSORHUB_MPI_PROGRESS_US", "0", 0);
  const bool reader = rank == 1;
  nlohmann::json results = nlohmann::json::array();
  Table table({"model", "method", "reader bytes", "median s", "GB/s", "vs plain", "read", "staged", "scattered"});
  std::uint64_t version = 0;
  for (const std::uint64_t model_bytes : c.sweep.sizes()) {
    const std::int64_t rows =
        static_cast<std::int64_t>(model_bytes / (c.tensors * static_cast<std::uint64_t>(c.cols) * 2));
    if (rows < c.from || c.cols < c.from) {
      throw UserError("bench reshard: " + format_bytes(model_bytes) + " in " + std::to_string(c.tensors) +
                      " tensors of " + std::to_string(c.cols) + " columns gives " + std::to_string(rows) +
                      " rows, fewer than --from");
    }
    const std::vector<std::int64_t> global{rows, c.cols};
    HubOptions opt;
    opt.transport = c.transport;
    opt.chunk_bytes = parse_bytes(c.chunk);
    opt.inflight = c.inflight;
    opt.scatter_reads = c.scatter;
    const bool pooled = c.transport == "mpi_rma";
    const std::uint64_t tensor_bytes = static_cast<std::uint64_t>(rows * c.cols) * 2;
    if (pooled && !reader) opt.pool_bytes = 3 * tensor_bytes * c.tensors + (64ull << 20);
    if (pooled && reader) opt.pool_bytes = 1 << 20;
    auto hub = Hub::join(MPI_COMM_WORLD, opt);
    std::vector<std::vector<std::uint16_t>> own;  // the trainer's memory without a pool
    auto memory = [&](std::uint64_t bytes) -> std::uint16_t* {
      if (pooled) return static_cast<std::uint16_t*>(hub->allocate(bytes));
      own.emplace_back(bytes / 2);
      return own.back().data();
    };
    std::vector<Method> methods(3);
    methods[0].name = "plain";
    methods[1].name = "dim0";
    methods[2].name = "dim1";
    for (std::size_t k = 0; k < methods.size(); ++k) {
      auto& m = methods[k];
      m.version = ++version;
      std::vector<Tensor> shard;
      for (std::uint32_t t = 0; t < c.tensors; ++t) {
        const std::string g = "layer" + std::to_string(t) + ".weight";
        const Box mine = split(global, k == 2 ? 1 : 0, c.to, 0);
        m.boxes.push_back(mine);
        if (reader) {
          m.buffers.emplace_back(volume(mine), 1);
          auto* p = m.buffers.back().data();
          m.into.push_back(k == 0 ? host_tensor(g, DType::kBF16, mine.extent, p)
                                  : host_slice(g, DType::kBF16, mine.extent, p, g, global, mine.offset));
          continue;
        }
        if (k == 0) {  // the baseline: the reader's bytes as one plain tensor each
          auto* p = memory(volume(mine) * 2);
          fill(t, mine, p);
          shard.push_back(host_tensor(g, DType::kBF16, mine.extent, p));
          continue;
        }
        for (std::int64_t r = 0; r < c.from; ++r) {
          const Box b = split(global, k == 2 ? 1 : 0, c.from, r);
          auto* p = memory(volume(b) * 2);
          fill(t, b, p);
          shard.push_back(host_slice(g + ".tp" + std::to_string(r), DType::kBF16, b.extent, p, g, global, b.offset));
        }
      }
      if (!reader) hub->publish("bench", m.version, shard);
    }
    mpi::sleepy_barrier(MPI_COMM_WORLD);
    PullOptions po;
    po.relay = false;
    for (std::uint32_t i = 0; i < c.sweep.warmup + c.sweep.iters; ++i) {
      for (auto& m : methods) {
        mpi::sleepy_barrier(MPI_COMM_WORLD, std::chrono::microseconds(500));
        if (!reader) continue;
        const auto t0 = Clock::now();
        m.last = hub->pull("bench", Version::exact(m.version), m.into, po);
        if (i >= c.sweep.warmup) m.seconds.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
      }
    }
    if (reader) {
      for (std::size_t k = 1; k < methods.size(); ++k) {  // every element of the resharded pulls
        const auto& m = methods[k];
        for (std::uint32_t t = 0; t < c.tensors; ++t) {
          std::vector<std::uint16_t> want(m.buffers[t].size());
          fill(t, m.boxes[t], want.data());
          if (want != m.buffers[t])
            throw ChecksumError("bench reshard: " + m.name + " tensor " + std::to_string(t) + " differs");
        }
      }
      const std::uint64_t reader_bytes = volume(methods[0].boxes[0]) * 2 * c.tensors;
      const double base = median(methods[0].seconds);
      for (const auto& m : methods) {
        const double s = median(m.seconds);
        table.add({format_bytes(model_bytes), m.name, format_bytes(reader_bytes), fmt(s, 4),
                   fmt(static_cast<double>(reader_bytes) / s / 1e9, 2), fmt(s / base, 3), format_bytes(m.last.bytes),
                   format_bytes(m.last.staged_bytes), format_bytes(m.last.scattered_bytes)});
        results.push_back({{"model_bytes", model_bytes},
                           {"method", m.name},
                           {"reader_bytes", reader_bytes},
                           {"seconds", m.seconds},
                           {"median_s", s},
                           {"ratio_plain", s / base},
                           {"read_bytes", m.last.bytes},
                           {"staged_bytes", m.last.staged_bytes},
                           {"scattered_bytes", m.last.scattered_bytes}});
      }
    }
    mpi::sleepy_barrier(MPI_COMM_WORLD);
    if (!reader) {
      for (const auto& m : methods) hub->unpublish("bench", m.version);
    }
    hub->close();
  }
  if (reader) {
    std::string cmd = "mpirun -n 2" + bench::mpirun_flags_seen() + " tensorhub bench reshard";
    for (const auto& a : args) cmd += " " + a;
    std::printf("# %s\n", cmd.c_str());
    table.print(stdout);
    const auto staging = 2 * static_cast<std::uint64_t>(c.inflight) * parse_bytes(c.chunk);
    std::printf("# reader: staging ring %s (2 x inflight x chunk), peak RSS %.0f MiB\n", format_bytes(staging).c_str(),
                peak_rss_mib());
    nlohmann::json j{{"benchmark", "reshard"},
                     {"command", cmd},
                     {"tensors", c.tensors},
                     {"cols", c.cols},
                     {"from", c.from},
                     {"to", c.to},
                     {"transport", c.transport},
                     {"scatter_reads", c.scatter},
                     {"chunk_bytes", parse_bytes(c.chunk)},
                     {"inflight", c.inflight},
                     {"staging_ring_bytes", staging},
                     {"reader_peak_rss_mib", peak_rss_mib()},
                     {"iterations", c.sweep.iters},
                     {"results", results}};
    std::printf("%s\n", j.dump().c_str());
    if (!c.json.empty()) write_json_file(c.json, j);
  }
  return 0;
}

}  // namespace

int cmd_bench_reshard(const Args& args) {
  ReshardConfig c;
  po::options_description desc(help_head(
      "bench reshard",
      "Prints a table and one JSON line: the time of a TP=--to reader's resharded pull of a model that the trainer "
      "holds as TP=--from boxes, cut along dim 0 (dim0) and along dim 1 (dim1), as a ratio to pulling the same bytes "
      "published unsliced (plain), from the same run. Rank 0 holds the trainer's boxes, rank 1 reads. 'staged' is "
      "what went through the reader's staging slots (box edges; strided rows with --no-scatter or on a path that "
      "cannot scatter), 'scattered' what was read straight into strided rows (cma, mpi_rma).\n"));
  c.sweep.add_to(desc, {.iters = "timed iterations per method (median reported)",
                        .warmup = "untimed iterations per method first"});
  desc.add_options()("tensors", po::value(&c.tensors)->default_value(c.tensors), "global tensors in the model")(
      "cols", po::value(&c.cols)->default_value(c.cols), "columns of each tensor (bf16; rows follow from the size)")(
      "from", po::value(&c.from)->default_value(c.from), "the trainer's boxes per tensor (its TP size)")(
      "to", po::value(&c.to)->default_value(c.to), "the reader's TP size (it reads box 0)")(
      "chunk", po::value(&c.chunk)->default_value(c.chunk), "chunk size of the versions")(
      "inflight", po::value(&c.inflight)->default_value(c.inflight), "reads in flight")(
      "transport", po::value(&c.transport)->default_value(c.transport), "the data path (mpi_rma, ucx, cma, ...)")(
      "no-scatter", po::bool_switch(), "stage strided rows and copy them out instead of scattered reads")(
      "json", po::value(&c.json), "also write the JSON to this file");
  po::variables_map vm;
  if (!parse_options("bench", desc, args, vm)) return 0;
  c.sweep.resolve(vm);
  c.scatter = !vm["no-scatter"].as<bool>();
  if (c.sweep.iters == 0) throw UserError("-n/--iters must be at least 1");
  if (c.inflight == 0) throw UserError("--inflight must be at least 1");
  if (c.tensors == 0 || c.cols < 1 || c.from < 1 || c.to < 1) {
    throw UserError("--tensors, --cols, --from and --to must be at least 1");
  }
  return run_mpi_command("bench", [&](int rank) { return run_reshard(c, args, rank); });
}

}  // namespace tensorhub::cli
