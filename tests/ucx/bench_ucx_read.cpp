// Bandwidth check of the ucx transport on one host (not a test; no timing is asserted):
//   bench_ucx_read [MiB=256] [iterations=5] [chunk MiB=4] [depth=8] [no-reader-thread]
// A holder process (ucx_peer) exposes MiB MiB; this process reads all of it through
// UcxTransport in chunk-sized reads, depth at a time, and compares with memcpy of the same size.
// Also prints the CPU an idle transport's progress thread costs.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
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
    tensorhub::transport::UcxOptions options;
    options.label = "bench-reader";
    options.progress_thread = reader_thread;
    tensorhub::transport::UcxTransport reader(options);
    std::vector<unsigned char> dst(bytes, 0);  // touched: fresh pages fault in slowly here
    const std::vector<tensorhub::test::Region> regions{{holder.endpoint(), holder.descriptors()[0], bytes}};

    std::vector<double> times;
    double holder_cpu = 0;
    for (int i = -1; i < iterations; ++i) {  // i = -1: warm-up (connection, rkey, page faults)
      if (i == 0) holder_cpu = cpu_seconds_of(holder.pid());
      const auto t = Clock::now();
      const auto done =
          tensorhub::test::read_regions(reader, regions, dst.data(), chunk, depth, std::chrono::minutes(2));
      const double s = seconds_since(t);
      for (const auto& c : done) {
        if (!c.ok) throw std::runtime_error(c.error);
      }
      if (i >= 0) times.push_back(s);
    }
    if (!tensorhub::test::check_pattern(dst.data(), 0, bytes, 1)) throw std::runtime_error("wrong bytes read");
    char label[64];
    std::snprintf(label, sizeof label, "ucx get (%llu MiB x %zu)", static_cast<unsigned long long>(chunk >> 20), depth);
    report(label, bytes, times);
    double busy = 0;
    for (const double t : times) busy += t;
    std::printf("holder CPU while serving: %.2f s per s of transfer (its progress thread)\n",
                (cpu_seconds_of(holder.pid()) - holder_cpu) / busy);

    std::vector<unsigned char> src(bytes, 1);
    times.clear();
    for (int i = -1; i < iterations; ++i) {
      const auto t = Clock::now();
      std::memcpy(dst.data(), src.data(), bytes);
      if (i >= 0) times.push_back(seconds_since(t));
    }
    report("memcpy", bytes, times);

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
