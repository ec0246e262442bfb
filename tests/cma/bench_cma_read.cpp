// Bandwidth of the cma transport against memcpy on the same machine in the same run (ratios are
// what counts on a shared machine). A holder forked from this process exposes S MiB; the reader
// pulls all of it in READ-MiB reads, DEPTH in flight, with THREADS reader threads, CHUNK KiB per
// process_vm_readv. Destinations are touched first (as a hub's pool is).
//   bench_cma_read [MiB=1024] [iterations=5] [read MiB=4] [depth=8] [threads=2] [chunk KiB=8192]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "cma/cma_transport.hpp"
#include "forked_holder.hpp"
#include "read_util.hpp"
#include "tensorhub/core/checksum.hpp"

namespace {

using Clock = std::chrono::steady_clock;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  using namespace tensorhub;
  const auto arg = [&](int i, unsigned long d) { return argc > i ? std::strtoul(argv[i], nullptr, 10) : d; };
  const std::uint64_t mib = arg(1, 1024), iters = std::max(1ul, arg(2, 5)), read_mib = arg(3, 4), depth = arg(4, 8);
  transport::CmaOptions o;
  o.threads = static_cast<std::uint32_t>(arg(5, 2));
  o.chunk = arg(6, 8192) << 10;
  const std::uint64_t bytes = mib << 20;
  try {
    test::ForkedHolder holder(mib, 1, 9);
    transport::CmaTransport reader(o);
    std::vector<std::uint64_t> src(bytes / 8), dst(bytes / 8);
    for (std::uint64_t i = 0; i < src.size(); ++i) src[i] = i;  // touched
    std::memset(dst.data(), 1, bytes);
    std::vector<double> copy_s, cma_s, hash_s;
    std::uint64_t sum = 0;
    for (std::uint64_t it = 0; it <= iters; ++it) {  // iteration 0: warm-up
      auto t = Clock::now();
      std::memcpy(dst.data(), src.data(), bytes);
      const double c = std::chrono::duration<double>(Clock::now() - t).count();
      t = Clock::now();
      const auto done = test::read_regions(reader, {{holder.endpoint(), holder.descriptors()[0], bytes}},
                                           reinterpret_cast<unsigned char*>(dst.data()), read_mib << 20, depth,
                                           std::chrono::seconds(60));
      const double r = std::chrono::duration<double>(Clock::now() - t).count();
      for (const auto& d : done) {
        if (!d.ok) throw std::runtime_error(d.error);
      }
      t = Clock::now();
      sum ^= checksum64(dst.data(), bytes);
      const double h = std::chrono::duration<double>(Clock::now() - t).count();
      if (it == 0) continue;
      copy_s.push_back(c);
      cma_s.push_back(r);
      hash_s.push_back(h);
    }
    if (!test::check_pattern(dst.data(), 0, bytes, 9)) throw std::runtime_error("bytes differ");
    const double gb = static_cast<double>(bytes) / 1e9;
    const double mc = gb / median(copy_s), cm = gb / median(cma_s), hs = gb / median(hash_s);
    const double verified = gb / (median(cma_s) + median(hash_s));  // read, then hash every byte
    std::printf("# bench_cma_read %llu MiB, %llu iterations, %llu MiB reads, depth %llu, %u threads, %llu KiB chunks\n",
                static_cast<unsigned long long>(mib), static_cast<unsigned long long>(iters),
                static_cast<unsigned long long>(read_mib), static_cast<unsigned long long>(depth), o.threads,
                static_cast<unsigned long long>(o.chunk >> 10));
    std::printf(
        "memcpy %.2f GB/s | cma %.2f GB/s (%.2f x memcpy) | xxh64 %.2f GB/s | cma+hash serial %.2f GB/s "
        "(%.2f x memcpy) [%llx]\n",
        mc, cm, cm / mc, hs, verified, verified / mc, static_cast<unsigned long long>(sum & 0xff));
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_cma_read: %s\n", e.what());
    return 1;
  }
}
