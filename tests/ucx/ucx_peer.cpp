// Peer process for the ucx tests and bench_ucx_read (started by PeerProcess, socket on FD 3):
//   ucx_peer hold MIB RANGES SEED   exposes MIB MiB of pattern SEED as RANGES adjacent ranges,
//                                   sends its endpoint, the descriptor count and each descriptor,
//                                   then serves reads (progress thread) until the socket closes.
//   ucx_peer read PART_BYTES        receives an endpoint and descriptors (each PART_BYTES long),
//                                   reads them all in 4 MiB chunks, 8 in flight, sends one byte
//                                   after the first verified-complete pass, and goes on until killed.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <stdexcept>
#include <string>
#include <vector>

#include "read_util.hpp"
#include "ucx/ucx_transport.hpp"
#include "ucx_test_util.hpp"

namespace {

constexpr int kFd = 3;

int hold(std::uint64_t bytes, int ranges, std::uint32_t seed) {
  tensorhub::transport::UcxOptions options;
  options.label = "holder-" + std::to_string(seed);
  tensorhub::transport::UcxTransport transport(options);
  void* buffer = transport.allocate(bytes);
  tensorhub::test::fill_pattern(buffer, bytes, seed);
  std::vector<tensorhub::transport::MemoryRange> parts;
  const std::uint64_t part = bytes / static_cast<std::uint64_t>(ranges);
  for (int i = 0; i < ranges; ++i) {
    parts.push_back({static_cast<char*>(buffer) + part * static_cast<std::uint64_t>(i), part});
  }
  {
    const auto exposure = transport.expose(parts);
    tensorhub::test::send_string(kFd, transport.endpoint());
    tensorhub::test::send_string(kFd, std::to_string(exposure->descriptors().size()));
    for (const auto& d : exposure->descriptors()) tensorhub::test::send_string(kFd, d);
    char c = 0;
    while (read(kFd, &c, 1) > 0) {
    }
  }
  transport.deallocate(buffer);
  return 0;
}

int read_forever(std::uint64_t part_bytes) {
  using namespace std::chrono_literals;
  const std::string endpoint = tensorhub::test::recv_string(kFd, 10s);
  const auto count = std::stoul(tensorhub::test::recv_string(kFd, 10s));
  std::vector<tensorhub::test::Region> regions;
  for (std::size_t i = 0; i < count; ++i) {
    regions.push_back({endpoint, tensorhub::test::recv_string(kFd, 10s), part_bytes});
  }
  tensorhub::transport::UcxOptions options;
  options.label = "reader-process";
  tensorhub::transport::UcxTransport transport(options);
  std::vector<unsigned char> dst(part_bytes * count);
  for (bool first = true;; first = false) {
    for (const auto& c : tensorhub::test::read_regions(transport, regions, dst.data(), 4 << 20, 8, 30s)) {
      if (!c.ok) throw std::runtime_error(c.error);
    }
    if (first) {
      const char streaming = 1;
      tensorhub::test::write_all(kFd, &streaming, 1);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  alarm(300);  // never outlive a broken test run
  try {
    const std::string mode = argc > 1 ? argv[1] : "";
    if (mode == "hold" && argc == 5) {
      return hold(std::strtoull(argv[2], nullptr, 10) << 20, std::atoi(argv[3]),
                  static_cast<std::uint32_t>(std::strtoul(argv[4], nullptr, 10)));
    }
    if (mode == "read" && argc == 3) return read_forever(std::strtoull(argv[2], nullptr, 10));
    std::fprintf(stderr, "usage: ucx_peer hold MIB RANGES SEED | ucx_peer read PART_BYTES\n");
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ucx_peer: %s\n", e.what());
    return 1;
  }
}
