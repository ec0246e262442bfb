// Bandwidth check of the ucx transport on one host (not a test; no timing is asserted):
//   bench_ucx_read [MiB=256] [iterations=5] [chunk MiB=4] [depth=8] [no-reader-thread]
// A holder process (ucx_peer) exposes MiB MiB; this process reads all of it through
// UcxTransport in chunk-sized reads, depth at a time, once per read mode (get, am) in interleaved
// rounds, and compares with memcpy of the same size.
// Also prints the CPU an idle transport's progress thread costs.
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "read_util.hpp"
#include "ucx/ucx_transport.hpp"
#include "ucx_test_util.hpp"

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

double cpu_seconds() {
  rusage r{};
  getrusage(RUSAGE_SELF, &r);
  return static_cast<double>(r.ru_utime.tv_sec + r.ru_stime.tv_sec) +
         static_cast<double>(r.ru_utime.tv_usec + r.ru_stime.tv_usec) * 1e-6;
}

// CPU seconds (user + system) process `pid` has used, from /proc/PID/stat.
double cpu_seconds_of(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(in, line);
  std::istringstream fields(line.substr(line.rfind(')') + 2));  // after "pid (comm) "
  std::string f;
  unsigned long long utime = 0, stime = 0;
  for (int i = 3; i <= 15 && fields >> f; ++i) {
    if (i == 14) utime = std::stoull(f);
    if (i == 15) stime = std::stoull(f);
  }
  return static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

// Peak resident set (VmHWM) of process `pid`, in MiB; -1 when unreadable.
double peak_rss_mib(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;  // "VmHWM:  1234 kB"
  }
  return -1;
}

void report(const char* what, std::uint64_t bytes, const std::vector<double>& times) {
  const double best = *std::min_element(times.begin(), times.end());
  double sum = 0;
  for (const double t : times) sum += t;
  std::printf("%-28s best %6.2f GB/s  mean %6.2f GB/s  (%zu x %llu MiB, GB = 1e9 B)\n", what, bytes / best / 1e9,
              bytes * times.size() / sum / 1e9, times.size(), static_cast<unsigned long long>(bytes >> 20));
}

}  // namespace

int main(int argc, char** argv) {
  const std::uint64_t mib = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 256;
  const int iterations = argc > 2 ? std::atoi(argv[2]) : 5;
  const std::uint64_t chunk = (argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 4) << 20;
  const std::size_t depth = argc > 4 ? std::strtoull(argv[4], nullptr, 10) : 8;
  const bool reader_thread = !(argc > 5 && std::string(argv[5]) == "no-reader-thread");
  const std::uint64_t bytes = mib << 20;
  alarm(600);
  try {
    tensorhub::test::HolderProcess holder(UCX_PEER_EXE, mib, 1, 1);
    // Two readers of the same holder, one per read mode, in interleaved rounds (this machine is
    // shared and noisy: a ratio of medians from one run, never an absolute figure).
    std::vector<std::unique_ptr<tensorhub::transport::UcxTransport>> readers;
    const tensorhub::transport::UcxRead modes[] = {tensorhub::transport::UcxRead::kGet,
                                                   tensorhub::transport::UcxRead::kAm};
    const char* names[] = {"get", "am"};
    for (const auto mode : modes) {
      auto options = tensorhub::transport::UcxOptions::from_env();  // TENSORHUB_UCX_AM_PIECE applies
      options.label = "bench-reader";
      options.progress_thread = reader_thread;
      options.read = mode;
      readers.push_back(std::make_unique<tensorhub::transport::UcxTransport>(options));
    }
    std::vector<unsigned char> dst(bytes, 0);  // touched: fresh pages fault in slowly here
    const std::vector<tensorhub::test::Region> regions{{holder.endpoint(), holder.descriptors()[0], bytes}};

    std::vector<double> times[2];
    double holder_cpu[2] = {0, 0};
    for (int i = -1; i < iterations; ++i) {  // i = -1: warm-up (connection, rkey, page faults)
      for (std::size_t m = 0; m < 2; ++m) {
        const double cpu0 = cpu_seconds_of(holder.pid());
        const auto t = Clock::now();
        const auto done =
            tensorhub::test::read_regions(*readers[m], regions, dst.data(), chunk, depth, std::chrono::minutes(2));
        const double sec = seconds_since(t);
        for (const auto& c : done) {
          if (!c.ok) throw std::runtime_error(c.error);
        }
        if (!tensorhub::test::check_pattern(dst.data(), 0, bytes, 1)) throw std::runtime_error("wrong bytes read");
        if (i >= 0) {
          times[m].push_back(sec);
          holder_cpu[m] += cpu_seconds_of(holder.pid()) - cpu0;
        }
      }
    }
    double median_gbs[2];
    for (std::size_t m = 0; m < 2; ++m) {
      char label[64];
      std::snprintf(label, sizeof label, "ucx %s (%llu MiB x %zu)", names[m],
                    static_cast<unsigned long long>(chunk >> 20), depth);
      report(label, bytes, times[m]);
      double busy = 0;
      for (const double t : times[m]) busy += t;
      std::printf("  holder CPU while serving %s: %.2f s per s of transfer\n", names[m], holder_cpu[m] / busy);
      auto sorted = times[m];
      std::sort(sorted.begin(), sorted.end());
      median_gbs[m] = static_cast<double>(bytes) / sorted[sorted.size() / 2] / 1e9;
    }
    std::printf("am / get (medians of %d interleaved rounds): %.2f x\n", iterations, median_gbs[1] / median_gbs[0]);
    // What UCX's buffers cost beside the exposed bytes (the holder) and the destination (here).
    const double holder_extra = peak_rss_mib(holder.pid()) - static_cast<double>(mib);
    const double reader_extra = peak_rss_mib(getpid()) - static_cast<double>(mib);
    const auto piece = readers[1]->stats().am_piece;
    std::printf("am piece %llu KiB; peak RSS beyond the %llu MiB of data: holder %.0f MiB, reader %.0f MiB\n",
                static_cast<unsigned long long>(piece >> 10), static_cast<unsigned long long>(mib), holder_extra,
                reader_extra);
    std::printf(
        "{\"bench\":\"ucx_read\",\"bytes\":%llu,\"chunk\":%llu,\"depth\":%zu,\"rounds\":%d,\"am_piece\":%llu,"
        "\"get_median_gbs\":%.3f,\"am_median_gbs\":%.3f,\"am_over_get\":%.3f,"
        "\"holder_extra_rss_mib\":%.0f,\"reader_extra_rss_mib\":%.0f}\n",
        static_cast<unsigned long long>(bytes), static_cast<unsigned long long>(chunk), depth, iterations,
        static_cast<unsigned long long>(piece), median_gbs[0], median_gbs[1], median_gbs[1] / median_gbs[0],
        holder_extra, reader_extra);

    std::vector<unsigned char> src(bytes, 1);
    std::vector<double> copies;
    for (int i = -1; i < iterations; ++i) {
      const auto t = Clock::now();
      std::memcpy(dst.data(), src.data(), bytes);
      if (i >= 0) copies.push_back(seconds_since(t));
    }
    report("memcpy", bytes, copies);

    const double c0 = cpu_seconds();
    const double h0 = cpu_seconds_of(holder.pid());
    std::this_thread::sleep_for(std::chrono::seconds(2));
    std::printf("idle CPU over 2 s: this process %.4f s, the holder %.4f s (progress threads asleep)\n",
                cpu_seconds() - c0, cpu_seconds_of(holder.pid()) - h0);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_ucx_read: %s\n", e.what());
    return 1;
  }
  return 0;
}
