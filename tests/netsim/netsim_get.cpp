// netsim_get: link measurements for the emulated cluster (scripts/netsim/netsim.sh).
//
// Every rank prints its host name, then the job measures over TCP between namespace hosts:
//   get      passive-target MPI_Rget of --size MiB from rank 0, one reader at a time
//            (MPI_Win_allocate window, shared lock, --inflight chunks of --chunk KiB in flight)
//   ring     every rank reads its right neighbour at once (each uplink and downlink used once)
//   fan-in   every rank reads rank 0 at once (they share rank 0's uplink)
//   bcast    MPI_Bcast of --size MiB from rank 0
// Data read is verified word by word. With --expect-mbit R, the get and ring rates and the
// fan-in aggregate must lie within --tolerance percent of R (link-bound), else exit 1.
// CPU: each phase reports the busiest rank's CPU time / wall (ranks busy-poll, so that is an
// upper bound) and the machine's busy share from /proc/stat (other tenants included).
#include <mpi.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <string>
#include <vector>

namespace {

struct Options {
  std::size_t size_mib = 16;
  std::size_t chunk_kib = 1024;
  int inflight = 8;
  double expect_mbit = 0;
  double tolerance_pct = 30;
  int min_hosts = 0;
  bool bcast = true;
};

[[noreturn]] void usage_exit(int rank, const char* msg) {
  if (rank == 0) {
    if (msg != nullptr) std::fprintf(stderr, "netsim_get: %s\n", msg);
    std::fprintf(stderr,
                 "usage: netsim_get [--size MiB] [--chunk KiB] [--inflight N] [--expect-mbit R]\n"
                 "                  [--tolerance PCT] [--min-hosts N] [--no-bcast]\n"
                 "Example: scripts/netsim/netsim.sh run -- -np 3 netsim_get --expect-mbit 200\n");
  }
  MPI_Finalize();
  std::exit(2);
}

Options parse(int argc, char** argv, int rank) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) usage_exit(rank, ("missing value for " + a).c_str());
      return argv[++i];
    };
    if (a == "--size")
      o.size_mib = std::strtoull(value(), nullptr, 10);
    else if (a == "--chunk")
      o.chunk_kib = std::strtoull(value(), nullptr, 10);
    else if (a == "--inflight")
      o.inflight = std::atoi(value());
    else if (a == "--expect-mbit")
      o.expect_mbit = std::atof(value());
    else if (a == "--tolerance")
      o.tolerance_pct = std::atof(value());
    else if (a == "--min-hosts")
      o.min_hosts = std::atoi(value());
    else if (a == "--no-bcast")
      o.bcast = false;
    else if (a == "-h" || a == "--help")
      usage_exit(rank, nullptr);
    else
      usage_exit(rank, ("unknown option " + a).c_str());
  }
  if (o.size_mib == 0 || o.chunk_kib == 0 || o.inflight < 1 || (o.size_mib << 10) % o.chunk_kib != 0)
    usage_exit(rank, "--size, --chunk, --inflight must be positive and --chunk must divide --size");
  return o;
}

double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

// Machine-wide (total, idle) jiffies from /proc/stat.
std::pair<double, double> machine_jiffies() {
  std::ifstream f("/proc/stat");
  std::string cpu;
  double v[10] = {};
  f >> cpu;
  double total = 0;
  for (double& x : v) {
    f >> x;
    total += x;
  }
  return {total, v[3] + v[4]};
}

std::uint64_t pattern(int rank, std::size_t word) {
  return (static_cast<std::uint64_t>(rank + 1) << 56) ^ (word * 0x9E3779B97F4A7C15ULL);
}

// Everything needed to time one phase across the job.
class Phase {
 public:
  explicit Phase(MPI_Comm comm) : comm_(comm) {
    MPI_Barrier(comm_);
    machine0_ = machine_jiffies();
    cpu0_ = cpu_seconds();
    t0_ = MPI_Wtime();
  }
  // Returns {wall seconds (max over ranks), busiest rank CPU %, machine busy %}.
  struct Result {
    double wall, cpu_pct, machine_pct;
  };
  Result finish() {
    MPI_Barrier(comm_);
    double wall = MPI_Wtime() - t0_;
    double cpu = cpu_seconds() - cpu0_;
    auto m1 = machine_jiffies();
    double max_wall = 0, max_cpu_pct = 0;
    double cpu_pct = wall > 0 ? 100 * cpu / wall : 0;
    MPI_Allreduce(&wall, &max_wall, 1, MPI_DOUBLE, MPI_MAX, comm_);
    MPI_Allreduce(&cpu_pct, &max_cpu_pct, 1, MPI_DOUBLE, MPI_MAX, comm_);
    double dt = m1.first - machine0_.first;
    double busy = dt > 0 ? 100 * (dt - (m1.second - machine0_.second)) / dt : 0;
    return {max_wall, max_cpu_pct, busy};
  }

 private:
  MPI_Comm comm_;
  std::pair<double, double> machine0_;
  double cpu0_ = 0, t0_ = 0;
};

// Passive-target read of `bytes` from `target` into dst; returns seconds, lock to unlock.
double read_remote(MPI_Win win, int target, char* dst, std::size_t bytes, std::size_t chunk, int inflight) {
  std::vector<MPI_Request> reqs(static_cast<std::size_t>(inflight), MPI_REQUEST_NULL);
  double t = MPI_Wtime();
  MPI_Win_lock(MPI_LOCK_SHARED, target, 0, win);
  std::size_t off = 0;
  int active = 0;
  while (off < bytes || active > 0) {
    int slot = -1;
    if (active < inflight && off < bytes) {
      for (int i = 0; i < inflight; ++i)
        if (reqs[static_cast<std::size_t>(i)] == MPI_REQUEST_NULL) {
          slot = i;
          break;
        }
    } else {
      MPI_Waitany(inflight, reqs.data(), &slot, MPI_STATUS_IGNORE);
      --active;
    }
    if (off < bytes && slot >= 0) {
      MPI_Rget(dst + off, static_cast<int>(chunk), MPI_BYTE, target, static_cast<MPI_Aint>(off),
               static_cast<int>(chunk), MPI_BYTE, win, &reqs[static_cast<std::size_t>(slot)]);
      off += chunk;
      ++active;
    }
  }
  MPI_Win_unlock(target, win);
  return MPI_Wtime() - t;
}

bool verify(const char* buf, std::size_t bytes, int source_rank) {
  const auto* w = reinterpret_cast<const std::uint64_t*>(buf);
  for (std::size_t i = 0; i < bytes / 8; ++i)
    if (w[i] != pattern(source_rank, i)) return false;
  return true;
}

double mbit(std::size_t bytes, double secs) { return secs > 0 ? static_cast<double>(bytes) * 8 / secs / 1e6 : 0; }

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, n = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  const Options o = parse(argc, argv, rank);
  const std::size_t bytes = o.size_mib << 20, chunk = o.chunk_kib << 10;
  int failures = 0;

  // Host names: one line per rank, then the number of distinct hosts.
  char host[64] = {};
  gethostname(host, sizeof host - 1);
  std::vector<char> hosts(static_cast<std::size_t>(n) * sizeof host);
  MPI_Gather(host, sizeof host, MPI_CHAR, hosts.data(), sizeof host, MPI_CHAR, 0, MPI_COMM_WORLD);
  std::vector<std::string> names;
  if (rank == 0) {
    for (int r = 0; r < n; ++r) {
      names.emplace_back(&hosts[static_cast<std::size_t>(r) * sizeof host]);
      std::printf("netsim_get: rank %d on host %s\n", r, names.back().c_str());
    }
    std::size_t distinct = std::set<std::string>(names.begin(), names.end()).size();
    std::printf("netsim_get: %d ranks on %zu distinct hosts\n", n, distinct);
    if (o.min_hosts > 0 && distinct < static_cast<std::size_t>(o.min_hosts)) {
      std::printf("netsim_get: FAIL: expected at least %d distinct hosts\n", o.min_hosts);
      ++failures;
    }
  }
  if (n < 2) {
    if (rank == 0) std::printf("netsim_get: needs at least 2 ranks\n");
    MPI_Finalize();
    return 2;
  }

  // Windows: every rank exposes `bytes` filled with its own pattern (touched before timing).
  char* base = nullptr;
  MPI_Win win;
  MPI_Win_allocate(static_cast<MPI_Aint>(bytes), 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
  for (std::size_t i = 0; i < bytes / 8; ++i) reinterpret_cast<std::uint64_t*>(base)[i] = pattern(rank, i);
  std::vector<char> dst(bytes);
  std::memset(dst.data(), 0, bytes);

  auto within = [&](double got, double cap) {
    return got >= cap * (1 - o.tolerance_pct / 100) && got <= cap * (1 + o.tolerance_pct / 100);
  };
  auto judge = [&](double got, double cap) -> const char* {
    if (o.expect_mbit <= 0) return "";
    if (within(got, cap)) return "  [link-bound]";
    ++failures;
    return "  [FAIL: outside tolerance]";
  };
  // " (93% of cap)" when a cap was given, else nothing.
  auto of_cap = [&](double got, const char* what = "cap") {
    if (o.expect_mbit <= 0) return std::string();
    char b[64];
    std::snprintf(b, sizeof b, " (%.0f%% of %s)", 100 * got / o.expect_mbit, what);
    return std::string(b);
  };

  // 1. One reader at a time from rank 0.
  for (int r = 1; r < n; ++r) {
    Phase ph(MPI_COMM_WORLD);
    double secs = 0;
    int ok = 1;
    if (rank == r) {
      secs = read_remote(win, 0, dst.data(), bytes, chunk, o.inflight);
      ok = verify(dst.data(), bytes, 0) ? 1 : 0;
    }
    auto res = ph.finish();
    MPI_Bcast(&secs, 1, MPI_DOUBLE, r, MPI_COMM_WORLD);
    MPI_Bcast(&ok, 1, MPI_INT, r, MPI_COMM_WORLD);
    if (rank == 0) {
      double m = mbit(bytes, secs);
      std::printf(
          "netsim_get: get    rank 0 -> rank %d (%s -> %s) %zu MiB: %.3f s = %.1f Mbit/s%s, "
          "cpu busiest rank %.0f%%, machine %.0f%%, data %s%s\n",
          r, names[0].c_str(), names[static_cast<std::size_t>(r)].c_str(), o.size_mib, secs, m, of_cap(m).c_str(),
          res.cpu_pct, res.machine_pct, ok ? "ok" : "CORRUPT", judge(m, o.expect_mbit));
      if (!ok) ++failures;
    }
  }

  // 2. Ring: everybody reads its right neighbour at the same time.
  {
    Phase ph(MPI_COMM_WORLD);
    int src = (rank + 1) % n;
    double secs = read_remote(win, src, dst.data(), bytes, chunk, o.inflight);
    int ok = verify(dst.data(), bytes, src) ? 1 : 0;
    auto res = ph.finish();
    std::vector<double> all(static_cast<std::size_t>(n));
    int all_ok = 0;
    MPI_Gather(&secs, 1, MPI_DOUBLE, all.data(), 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    MPI_Reduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, 0, MPI_COMM_WORLD);
    if (rank == 0) {
      double lo = 1e30, hi = 0, sum = 0;
      for (double s : all) {
        double m = mbit(bytes, s);
        lo = std::min(lo, m);
        hi = std::max(hi, m);
        sum += m;
      }
      std::printf(
          "netsim_get: ring   %d readers at once, %zu MiB each: per reader min %.1f / avg %.1f / max %.1f "
          "Mbit/s%s, aggregate %.1f Mbit/s, cpu busiest rank %.0f%%, machine %.0f%%, "
          "data %s%s\n",
          n, o.size_mib, lo, sum / n, hi, of_cap(lo, "cap for the slowest").c_str(), sum, res.cpu_pct, res.machine_pct,
          all_ok ? "ok" : "CORRUPT", judge(lo, o.expect_mbit));
      if (!all_ok) ++failures;
    }
  }

  // 3. Fan-in: all other ranks read rank 0 at once; they share its uplink.
  {
    Phase ph(MPI_COMM_WORLD);
    double secs = 0;
    int ok = 1;
    if (rank != 0) {
      secs = read_remote(win, 0, dst.data(), bytes, chunk, o.inflight);
      ok = verify(dst.data(), bytes, 0) ? 1 : 0;
    }
    auto res = ph.finish();
    int all_ok = 0;
    double slowest = 0;
    MPI_Reduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, 0, MPI_COMM_WORLD);
    MPI_Reduce(&secs, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0) {
      double agg = mbit(bytes * static_cast<std::size_t>(n - 1), slowest);
      std::printf(
          "netsim_get: fan-in %d readers of rank 0 at once, %zu MiB each: %.3f s, aggregate %.1f Mbit/s%s, "
          "%.1f Mbit/s per reader, cpu busiest rank %.0f%%, machine %.0f%%, "
          "data %s%s\n",
          n - 1, o.size_mib, slowest, agg, of_cap(agg, "one uplink").c_str(), agg / (n - 1), res.cpu_pct,
          res.machine_pct, all_ok ? "ok" : "CORRUPT", judge(agg, o.expect_mbit));
      if (!all_ok) ++failures;
    }
  }

  // 4. MPI_Bcast (informational: the algorithm decides which links carry what).
  if (o.bcast) {
    std::vector<char> buf(bytes);
    if (rank == 0)
      std::memcpy(buf.data(), base, bytes);
    else
      std::memset(buf.data(), 0, bytes);
    Phase ph(MPI_COMM_WORLD);
    MPI_Bcast(buf.data(), static_cast<int>(bytes), MPI_BYTE, 0, MPI_COMM_WORLD);
    auto res = ph.finish();
    int ok = verify(buf.data(), bytes, 0) ? 1 : 0, all_ok = 0;
    MPI_Reduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, 0, MPI_COMM_WORLD);
    if (rank == 0) {
      std::printf(
          "netsim_get: bcast  %zu MiB to %d ranks: %.3f s = %.1f Mbit/s per receiver, cpu busiest rank "
          "%.0f%%, machine %.0f%%, data %s\n",
          o.size_mib, n - 1, res.wall, mbit(bytes, res.wall), res.cpu_pct, res.machine_pct, all_ok ? "ok" : "CORRUPT");
      if (!all_ok) ++failures;
    }
  }

  MPI_Win_free(&win);
  MPI_Bcast(&failures, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    if (o.expect_mbit > 0 && failures == 0)
      std::printf("netsim_get: link-bound ok (every rate within %.0f%% of %.0f Mbit/s)\n", o.tolerance_pct,
                  o.expect_mbit);
    else if (failures == 0)
      std::printf("netsim_get: ok\n");
    else
      std::printf("netsim_get: FAILED (%d problem(s))\n", failures);
    std::fflush(stdout);
  }
  MPI_Finalize();
  return failures == 0 ? 0 : 1;
}
