// tensorhub bench p2p: one reader pulls S bytes from one holder. Every method runs in the same
// job on the same buffers, so the ratios are meaningful on a noisy machine:
//   memcpy            local copy of S on the reader (the memory-bandwidth ceiling)
//   mpi_get_static    MPI_Rget chunks from an MPI_Win_create window (per-publish windows)
//   mpi_get_dynamic   MPI_Rget chunks from an MPI_Win_create_dynamic + attach window
//   hub_pull          Hub::pull (coordinator assignment, pool window, checksums verified)
//   hub_pull_noverify Hub::pull with verify and relay off
// plus the setup costs that decide between window kinds: MPI_Win_create (collective, per
// version) vs MPI_Win_attach (local).
#include <mpi.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <vector>

#include "bench/flags.hpp"
#include "common/command_table.hpp"
#include "common/options.hpp"
#include "common/report.hpp"
#include "tensorhub/core/units.hpp"
#include "tensorhub/hub.hpp"
#include "tensorhub/mpi/mpi.hpp"
#include "tensorhub/mpi/window.hpp"

namespace po = boost::program_options;

namespace tensorhub::cli {
namespace {

using Clock = std::chrono::steady_clock;

struct P2pConfig {
  bench::SweepFlags sweep{"64MiB", 5, 1};
  std::string chunk = "4MiB";
  std::uint32_t inflight = 8;
  std::string json;
  bool dynamic = false;
};

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

void rget_all(mpi::Window& w, unsigned char* dst, std::uint64_t bytes, std::uint64_t chunk, MPI_Aint base,
              std::uint32_t inflight) {
  std::vector<MPI_Request> reqs;
  for (std::uint64_t off = 0; off < bytes; off += chunk) {
    if (reqs.size() >= inflight) {
      mpi::check(MPI_Waitall(static_cast<int>(reqs.size()), reqs.data(), MPI_STATUSES_IGNORE), "MPI_Waitall");
      reqs.clear();
    }
    reqs.push_back(w.rget(dst + off, std::min(chunk, bytes - off), 0, base + static_cast<MPI_Aint>(off)));
  }
  mpi::check(MPI_Waitall(static_cast<int>(reqs.size()), reqs.data(), MPI_STATUSES_IGNORE), "MPI_Waitall");
}

struct Sample {
  std::vector<double> seconds;
  double median() const {
    auto s = seconds;
    std::sort(s.begin(), s.end());
    return s[s.size() / 2];
  }
  double best() const { return *std::min_element(seconds.begin(), seconds.end()); }
};

int run_p2p(const P2pConfig& c, int rank) {
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size != 2) throw UserError("bench p2p needs exactly 2 ranks (holder and reader); got " + std::to_string(size));
  const std::uint64_t chunk = parse_bytes(c.chunk);
  // Same conditions for every method: no hub progress thread (the idle holder drives MPI
  // progress from its barrier loop), unless the caller asks for one.
  setenv("TENSORHUB_MPI_PROGRESS_US", "0", 0);
  HubOptions opt;
  opt.chunk_bytes = chunk;
  opt.inflight = c.inflight;
  opt.pool_bytes = parse_bytes(c.sweep.maxbytes) + 4096;  // registered memory for the hub's buffers
  auto hub = Hub::join(MPI_COMM_WORLD, opt);
  const bool reader = rank == 1;

  nlohmann::json results = nlohmann::json::array();
  Table table({"bytes", "method", "median GB/s", "best GB/s", "vs memcpy", "vs mpi_get_static"});
  std::uint64_t version = 0;
  for (const std::uint64_t bytes : c.sweep.sizes()) {
    std::vector<unsigned char> src(bytes);
    std::vector<unsigned char> dst(bytes);
    for (std::uint64_t i = 0; i < bytes; i += 4096) src[i] = static_cast<unsigned char>(i * 31 + 7 + rank);
    std::memset(dst.data(), 1, bytes);  // fault pages in before timing
    std::map<std::string, Sample> samples;
    std::map<std::string, double> setup;

    auto timed = [&](const std::string& name, const std::function<void()>& fn) {
      for (std::uint32_t i = 0; i < c.sweep.warmup + c.sweep.iters; ++i) {
        mpi::sleepy_barrier(MPI_COMM_WORLD);
        if (reader) {
          const auto t = Clock::now();
          fn();
          if (i >= c.sweep.warmup) samples[name].seconds.push_back(seconds_since(t));
        }
      }
    };

    timed("memcpy", [&] { std::memcpy(dst.data(), src.data(), bytes); });

    {  // per-publish window: collective creation per version
      mpi::sleepy_barrier(MPI_COMM_WORLD);
      auto t = Clock::now();
      mpi::Window w = mpi::Window::create(MPI_COMM_WORLD, reader ? nullptr : src.data(), reader ? 0 : bytes);
      setup["MPI_Win_create"] = seconds_since(t);
      w.lock_all();
      timed("mpi_get_static", [&] { rget_all(w, dst.data(), bytes, chunk, 0, c.inflight); });
      mpi::sleepy_barrier(MPI_COMM_WORLD);
      w.free();
    }
    if (c.dynamic) {  // dynamic window + attach (crashes at random in Open MPI 4.1.4's osc ucx)
      mpi::Window w = mpi::Window::create_dynamic(MPI_COMM_WORLD);
      auto t = Clock::now();
      std::optional<mpi::Attachment> att;
      if (!reader) att.emplace(w, src.data(), bytes);
      setup["MPI_Win_attach"] = seconds_since(t);
      MPI_Aint base = att ? att->address() : 0;
      mpi::check(MPI_Bcast(&base, 1, MPI_AINT, 0, MPI_COMM_WORLD), "MPI_Bcast(address)");
      w.lock_all();
      timed("mpi_get_dynamic", [&] { rget_all(w, dst.data(), bytes, chunk, base, c.inflight); });
      mpi::sleepy_barrier(MPI_COMM_WORLD);
      w.unlock_all();
      att.reset();
      w.free();
    }
    {  // the hub, on buffers from its registered pool (MPI_Win_allocate)
      ++version;
      auto* buf = static_cast<unsigned char*>(hub->allocate(bytes));
      if (reader) {
        std::memset(buf, 1, bytes);
      } else {
        std::memcpy(buf, src.data(), bytes);
      }
      const Tensor t = host_tensor("blob", DType::kU8, {static_cast<std::int64_t>(bytes)}, buf);
      if (!reader) {
        const auto t0 = Clock::now();
        hub->publish("bench", version, std::span<const Tensor>(&t, 1));
        setup["hub_publish"] = seconds_since(t0);
      }
      mpi::sleepy_barrier(MPI_COMM_WORLD);
      PullOptions verify_on;
      verify_on.relay = false;
      PullOptions verify_off;
      verify_off.relay = false;
      verify_off.verify = false;
      timed("hub_pull",
            [&] { hub->pull("bench", Version::exact(version), std::span<const Tensor>(&t, 1), verify_on); });
      timed("hub_pull_noverify",
            [&] { hub->pull("bench", Version::exact(version), std::span<const Tensor>(&t, 1), verify_off); });
      mpi::sleepy_barrier(MPI_COMM_WORLD);
      if (!reader) hub->unpublish("bench", version);
      if (reader) std::memcpy(dst.data(), buf, bytes);  // checked below with the others
      hub->deallocate(buf);
    }
    if (reader) {
      // The reader's copy must equal the holder's pattern.
      for (std::uint64_t i = 0; i < bytes; i += 4096) {
        if (dst[i] != static_cast<unsigned char>(i * 31 + 7))
          throw ChecksumError("bench p2p: bytes differ at " + std::to_string(i));
      }
      const double memcpy_gbps = bytes / samples["memcpy"].median() / 1e9;
      const double static_gbps = bytes / samples["mpi_get_static"].median() / 1e9;
      for (const auto& name : {"memcpy", "mpi_get_static", "mpi_get_dynamic", "hub_pull", "hub_pull_noverify"}) {
        if (!samples.count(name)) continue;
        const auto& s = samples[name];
        const double med = bytes / s.median() / 1e9;
        const double best = bytes / s.best() / 1e9;
        table.add({format_bytes(bytes), name, fmt(med, 2), fmt(best, 2), fmt(med / memcpy_gbps, 2),
                   fmt(med / static_gbps, 2)});
        results.push_back({{"bytes", bytes},
                           {"method", name},
                           {"median_gbps", med},
                           {"best_gbps", best},
                           {"seconds", s.seconds},
                           {"ratio_memcpy", med / memcpy_gbps},
                           {"ratio_mpi_get_static", med / static_gbps}});
      }
    }
    // Setup costs are measured on the holder (rank 0); send them to the reader for the report
    // (MPI_Win_attach only with --dynamic).
    double costs[3] = {setup["MPI_Win_create"], setup["MPI_Win_attach"], setup["hub_publish"]};
    mpi::check(MPI_Bcast(costs, 3, MPI_DOUBLE, 0, MPI_COMM_WORLD), "MPI_Bcast(costs)");
    if (reader) {
      results.push_back({{"bytes", bytes},
                         {"method", "setup"},
                         {"MPI_Win_create_s", costs[0]},
                         {"MPI_Win_attach_s", costs[1]},
                         {"hub_publish_s", costs[2]}});
      table.add({format_bytes(bytes), "setup: MPI_Win_create / attach / publish (ms)",
                 fmt(costs[0] * 1e3, 2) + " / " + (c.dynamic ? fmt(costs[1] * 1e3, 3) : std::string("-")) + " / " +
                     fmt(costs[2] * 1e3, 2),
                 "", "", ""});
    }
  }
  hub->close();
  if (reader) {
    const std::string cmd = "mpirun -n 2 --mca osc ucx tensorhub bench p2p -b " + c.sweep.minbytes + " -e " +
                            c.sweep.maxbytes + " -f " + std::to_string(c.sweep.stepfactor) + " -n " +
                            std::to_string(c.sweep.iters) + " -w " + std::to_string(c.sweep.warmup) + " --chunk " +
                            c.chunk + (c.dynamic ? " --dynamic" : "");
    std::printf("# %s\n", cmd.c_str());
    table.print(stdout);
    nlohmann::json j{{"benchmark", "p2p"},          {"command", cmd},
                     {"chunk_bytes", chunk},        {"inflight", c.inflight},
                     {"iterations", c.sweep.iters}, {"results", results}};
    std::printf("%s\n", j.dump().c_str());
    if (!c.json.empty()) write_json_file(c.json, j);
  }
  return 0;
}

}  // namespace

int cmd_bench_p2p(const Args& args) {
  P2pConfig c;
  c.sweep.set_range("1GiB", 4);
  po::options_description desc(
      help_head("bench p2p", "Prints a table and one JSON line. The holder is rank 0, the reader rank 1.\n"));
  c.sweep.add_to(desc, {.iters = "timed iterations per method and size (median reported)",
                        .warmup = "untimed iterations per method and size first",
                        .p2p_aliases = true});
  desc.add_options()("chunk", po::value(&c.chunk)->default_value(c.chunk), "chunk size for every method")(
      "inflight", po::value(&c.inflight)->default_value(c.inflight), "reads in flight")(
      "json", po::value(&c.json), "also write the JSON to this file")(
      "dynamic", po::bool_switch(&c.dynamic),
      "also measure MPI_Rget on an MPI_Win_create_dynamic window (crashes at random with Open MPI 4.1.4 "
      "osc ucx; see README)");
  po::variables_map vm;
  if (!parse_options("bench", desc, args, vm)) return 0;
  c.sweep.resolve(vm);
  if (c.sweep.iters == 0) throw UserError("-n/--iters must be at least 1");
  return run_mpi_command("bench", [&](int rank) { return run_p2p(c, rank); });
}

}  // namespace tensorhub::cli
