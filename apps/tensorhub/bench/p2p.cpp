// tensorhub bench p2p: one reader pulls S bytes from one holder. Every method runs in the same
// job on the same bytes, so the ratios are meaningful on a noisy machine:
//   memcpy              local copy of S on the reader (the memory-bandwidth ceiling)
//   raw_*               MPI reads with no hub (bench/p2p_raw.hpp): raw_get_flush on an
//                       MPI_Win_allocate window is the hub's mpi_rma pool and read, the baseline
//                       of the "vs raw" column; the MPI_Win_create variants carry _win_create
//   hub_pull            Hub::pull (coordinator assignment, checksums verified), once per
//   hub_pull_noverify   --transport entry (any transport name the factory knows: mpi_rma, ucx,
//                       cma, ...; mpi_rma:rget / mpi_rma:get_flush set TENSORHUB_MPI_READ), and
//                       the same with verify and relay off
// plus the setup costs (window creation, publish). The printed command line is rebuilt from
// what this process saw (bench/launch_flags.hpp), not assumed.
#include <mpi.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <sstream>
#include <vector>

#include "bench/flags.hpp"
#include "bench/launch_flags.hpp"
#include "bench/p2p_raw.hpp"
#include "common/command_table.hpp"
#include "common/options.hpp"
#include "common/report.hpp"
#include "tensorhub/core/units.hpp"
#include "tensorhub/hub.hpp"
#include "tensorhub/mpi/mpi.hpp"

namespace po = boost::program_options;

namespace tensorhub::cli {
namespace {

using Clock = std::chrono::steady_clock;
constexpr const char* kBaseline = "raw_get_flush";

struct P2pConfig {
  bench::SweepFlags sweep{"64MiB", 5, 1};
  std::string chunk = "4MiB";
  std::uint32_t inflight = 8;
  std::string json;
  bool dynamic = false;
  std::string transports = "mpi_rma";
  std::uint32_t holder_poll_us = 500;
  int verify_threads = -1;
};

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

struct Sample {
  std::vector<double> seconds;
  double median() const {
    auto s = seconds;
    std::sort(s.begin(), s.end());
    return s[s.size() / 2];
  }
  double best() const { return *std::min_element(seconds.begin(), seconds.end()); }
};

// "mpi_rma:rget" -> transport "mpi_rma", TENSORHUB_MPI_READ "rget".
struct TransportSpec {
  std::string label;
  std::string name;
  std::string read_mode;  // empty: the environment's
};

std::vector<TransportSpec> parse_transports(const std::string& list) {
  std::vector<TransportSpec> out;
  std::stringstream in(list);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (item.empty()) throw UserError("--transport: empty entry in '" + list + "'");
    TransportSpec s{item, item, {}};
    if (const auto colon = item.find(':'); colon != std::string::npos) {
      s.name = item.substr(0, colon);
      s.read_mode = item.substr(colon + 1);
      if (s.name != "mpi_rma" || (s.read_mode != "get_flush" && s.read_mode != "rget"))
        throw UserError("--transport: '" + item +
                        "': only mpi_rma takes a read mode (mpi_rma:get_flush, mpi_rma:rget)");
    }
    out.push_back(s);
  }
  if (out.empty()) throw UserError("--transport: no transport given");
  return out;
}

// Sets (or, with an empty value, leaves) TENSORHUB_MPI_READ for one hub; restores it after.
class ScopedReadMode {
 public:
  explicit ScopedReadMode(const std::string& mode) {
    if (mode.empty()) return;
    if (const char* v = std::getenv(kVar)) old_ = v;
    ::setenv(kVar, mode.c_str(), 1);
    set_ = true;
  }
  ~ScopedReadMode() {
    if (!set_) return;
    if (old_) {
      ::setenv(kVar, old_->c_str(), 1);
    } else {
      ::unsetenv(kVar);
    }
  }
  ScopedReadMode(const ScopedReadMode&) = delete;
  ScopedReadMode& operator=(const ScopedReadMode&) = delete;

 private:
  static constexpr const char* kVar = "TENSORHUB_MPI_READ";
  bool set_ = false;
  std::optional<std::string> old_;
};

struct Rig {
  const P2pConfig& c;
  bool reader;
  std::uint64_t chunk;
  std::map<std::string, Sample> samples;
  std::vector<std::string> order;  // methods in the order they ran
  std::map<std::string, double> setup;

  void timed(const std::string& name, const std::function<void()>& fn) {
    order.push_back(name);
    for (std::uint32_t i = 0; i < c.sweep.warmup + c.sweep.iters; ++i) {
      mpi::sleepy_barrier(MPI_COMM_WORLD, std::chrono::microseconds(c.holder_poll_us));
      if (reader) {
        const auto t = Clock::now();
        fn();
        if (i >= c.sweep.warmup) samples[name].seconds.push_back(seconds_since(t));
      }
    }
  }

  // Hub::pull of `bytes` over one transport; the reader's copy ends up in `dst`.
  void hub_pulls(const TransportSpec& spec, const unsigned char* src, unsigned char* dst, std::uint64_t bytes,
                 std::uint64_t version) {
    ScopedReadMode mode(spec.read_mode);
    HubOptions opt;
    opt.transport = spec.name;
    opt.chunk_bytes = chunk;
    opt.inflight = c.inflight;
    opt.verify_threads = c.verify_threads;
    // mpi_rma reads and exposes its registered pool; the other transports any memory.
    const bool pooled = spec.name == "mpi_rma";
    if (pooled) opt.pool_bytes = bytes + 4096;
    auto hub = Hub::join(MPI_COMM_WORLD, opt);
    std::vector<unsigned char> own;
    unsigned char* buf = nullptr;
    if (pooled) {
      buf = static_cast<unsigned char*>(hub->allocate(bytes));
    } else {
      own.resize(bytes);
      buf = own.data();
    }
    if (reader) {
      std::memset(buf, 1, bytes);
    } else {
      std::memcpy(buf, src, bytes);
    }
    const Tensor t = host_tensor("blob", DType::kU8, {static_cast<std::int64_t>(bytes)}, buf);
    if (!reader) {
      const auto t0 = Clock::now();
      hub->publish("bench", version, std::span<const Tensor>(&t, 1));
      setup["hub_publish " + spec.label] = seconds_since(t0);
    }
    mpi::sleepy_barrier(MPI_COMM_WORLD);
    PullOptions verify_on;
    verify_on.relay = false;
    PullOptions verify_off = verify_on;
    verify_off.verify = false;
    const auto tensors = std::span<const Tensor>(&t, 1);
    timed("hub_pull " + spec.label, [&] { hub->pull("bench", Version::exact(version), tensors, verify_on); });
    timed("hub_pull_noverify " + spec.label, [&] { hub->pull("bench", Version::exact(version), tensors, verify_off); });
    mpi::sleepy_barrier(MPI_COMM_WORLD);
    if (!reader) hub->unpublish("bench", version);
    if (reader) std::memcpy(dst, buf, bytes);  // checked with the others
    if (pooled) hub->deallocate(buf);
    hub->close();
  }
};

// What was run: the launcher flags this process saw and its own arguments, as given.
std::string command_line(const Args& args) {
  std::string cmd = "mpirun -n 2" + bench::mpirun_flags_seen() + " tensorhub bench p2p";
  for (const auto& a : args) cmd += " " + a;
  return cmd;
}

int run_p2p(const P2pConfig& c, const Args& args, int rank) {
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size != 2) throw UserError("bench p2p needs exactly 2 ranks (holder and reader); got " + std::to_string(size));
  const auto specs = parse_transports(c.transports);
  // Same conditions for every method: no hub progress thread (the idle holder drives MPI
  // progress from its barrier loop), unless the caller asks for one.
  setenv("TENSORHUB_MPI_PROGRESS_US", "0", 0);
  const bool reader = rank == 1;
  nlohmann::json results = nlohmann::json::array();
  Table table({"bytes", "method", "transport", "median GB/s", "best GB/s", "vs memcpy", "vs raw_get_flush"});
  std::uint64_t version = 0;
  std::vector<std::string> setup_lines;  // holder-side costs (ms), printed under the table
  for (const std::uint64_t bytes : c.sweep.sizes()) {
    Rig rig{c, reader, parse_bytes(c.chunk), {}, {}, {}};
    std::vector<unsigned char> src(bytes);
    std::vector<unsigned char> dst(bytes);
    for (std::uint64_t i = 0; i < bytes; i += 4096) src[i] = static_cast<unsigned char>(i * 31 + 7 + rank);
    std::memset(dst.data(), 1, bytes);  // fault pages in before timing
    rig.timed("memcpy", [&] { std::memcpy(dst.data(), src.data(), bytes); });
    bench::run_raw_baselines({reader, src.data(), dst.data(), bytes, rig.chunk, c.inflight, c.dynamic,
                              [&](const std::string& n, const std::function<void()>& f) { rig.timed(n, f); },
                              [&](const std::string& n, double s) { rig.setup[n] = s; }});
    for (const auto& spec : specs) rig.hub_pulls(spec, src.data(), dst.data(), bytes, ++version);
    if (reader) {
      for (std::uint64_t i = 0; i < bytes; i += 4096) {  // the last copy must be the holder's pattern
        if (dst[i] != static_cast<unsigned char>(i * 31 + 7))
          throw ChecksumError("bench p2p: bytes differ at " + std::to_string(i));
      }
      const double memcpy_gbps = bytes / rig.samples["memcpy"].median() / 1e9;
      const double raw_gbps = bytes / rig.samples[kBaseline].median() / 1e9;
      for (const auto& key : rig.order) {
        const auto& s = rig.samples[key];
        const auto space = key.find(' ');
        const std::string method = key.substr(0, space);
        const std::string transport = space == std::string::npos ? std::string("-") : key.substr(space + 1);
        const double med = bytes / s.median() / 1e9;
        const double best = bytes / s.best() / 1e9;
        table.add({format_bytes(bytes), method, transport, fmt(med, 2), fmt(best, 2), fmt(med / memcpy_gbps, 2),
                   fmt(med / raw_gbps, 2)});
        results.push_back({{"bytes", bytes},
                           {"method", method},
                           {"transport", transport},
                           {"median_gbps", med},
                           {"best_gbps", best},
                           {"seconds", s.seconds},
                           {"ratio_memcpy", med / memcpy_gbps},
                           {"ratio_raw_get_flush", med / raw_gbps}});
      }
    }
    // Setup costs are measured on the holder (rank 0); the reader reports them.
    const std::string joined = mpi::bcast_string(MPI_COMM_WORLD, 0, [&] {
      std::string j;
      for (const auto& [n, s] : rig.setup) j += n + "=" + std::to_string(s) + "\n";
      return j;
    }());
    if (reader) {
      nlohmann::json costs{{"bytes", bytes}, {"method", "setup"}};
      std::stringstream in(joined);
      std::string line;
      std::string text;
      while (std::getline(in, line)) {
        const auto eq = line.find('=');
        const double s = std::stod(line.substr(eq + 1));
        costs[line.substr(0, eq) + "_s"] = s;
        text += (text.empty() ? "" : ", ") + line.substr(0, eq) + " " + fmt(s * 1e3, 2);
      }
      results.push_back(costs);
      setup_lines.push_back(format_bytes(bytes) + ": " + text);
    }
  }
  if (reader) {
    const std::string cmd = command_line(args);
    std::printf("# %s\n", cmd.c_str());
    table.print(stdout);
    for (const auto& l : setup_lines) std::printf("# setup (holder, ms) %s\n", l.c_str());
    nlohmann::json mca = nlohmann::json::object();
    for (const auto& [k, v] : bench::mca_seen()) mca[k] = v;
    nlohmann::json j{{"benchmark", "p2p"},
                     {"command", cmd},
                     {"mca", mca},
                     {"chunk_bytes", parse_bytes(c.chunk)},
                     {"inflight", c.inflight},
                     {"holder_poll_us", c.holder_poll_us},
                     {"verify_threads", c.verify_threads},
                     {"iterations", c.sweep.iters},
                     {"results", results}};
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
      help_head("bench p2p",
                "Prints a table and one JSON line with ratios vs memcpy and vs raw_get_flush (MPI_Get + "
                "MPI_Win_flush on an MPI_Win_allocate window: the hub's mpi_rma pool) from the same run. The "
                "holder is rank 0, the reader rank 1. Methods: memcpy; raw_get_flush, raw_rget (MPI_Win_allocate); "
                "raw_get_flush_win_create, raw_rget_win_create (MPI_Win_create); raw_rget_dynamic (--dynamic); "
                "hub_pull and hub_pull_noverify per --transport entry.\n"));
  c.sweep.add_to(desc, {.iters = "timed iterations per method and size (median reported)",
                        .warmup = "untimed iterations per method and size first",
                        .p2p_aliases = true});
  desc.add_options()("chunk", po::value(&c.chunk)->default_value(c.chunk), "chunk size for every method")(
      "inflight", po::value(&c.inflight)->default_value(c.inflight), "reads in flight")(
      "transport", po::value(&c.transports)->default_value(c.transports),
      "comma-separated transports for hub_pull, each a name the transport factory knows (mpi_rma, ucx, "
      "cma, ...); mpi_rma:get_flush or mpi_rma:rget also sets TENSORHUB_MPI_READ for that hub")(
      "verify-threads", po::value(&c.verify_threads)->default_value(c.verify_threads),
      "HubOptions::verify_threads of the reader's hub: -1 min(3, CPUs in its affinity mask - 1), 0 verify "
      "on the pulling thread")(
      "holder-poll-us", po::value(&c.holder_poll_us)->default_value(c.holder_poll_us),
      "how often the idle holder calls MPI (its barrier's MPI_Test) while the reader reads; e.g. 50000 "
      "shows which reads wait for the holder")("json", po::value(&c.json), "also write the JSON to this file")(
      "dynamic", po::bool_switch(&c.dynamic),
      "also measure MPI_Rget on an MPI_Win_create_dynamic window (crashes at random with Open MPI 4.1.4 "
      "osc ucx; see README)");
  po::variables_map vm;
  if (!parse_options("bench", desc, args, vm)) return 0;
  c.sweep.resolve(vm);
  if (c.sweep.iters == 0) throw UserError("-n/--iters must be at least 1");
  if (c.inflight == 0) throw UserError("--inflight must be at least 1");
  (void)parse_transports(c.transports);  // a usage error before MPI starts
  return run_mpi_command("bench", [&](int rank) { return run_p2p(c, args, rank); });
}

}  // namespace tensorhub::cli
