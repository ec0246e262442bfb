// Holder process for the ucx tests and bench_ucx_read (started by HolderProcess):
//   ucx_holder FD MIB RANGES SEED
// Exposes MIB MiB of pattern SEED as RANGES adjacent ranges, sends its endpoint, the number of
// descriptors and each descriptor over FD, then serves reads (progress thread) until FD closes.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "ucx/ucx_transport.hpp"
#include "ucx_test_util.hpp"

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: ucx_holder FD MIB RANGES SEED\n");
    return 2;
  }
  alarm(300);  // never outlive a broken test run
  try {
    const int fd = std::atoi(argv[1]);
    const std::uint64_t bytes = std::strtoull(argv[2], nullptr, 10) << 20;
    const int ranges = std::atoi(argv[3]);
    const auto seed = static_cast<std::uint32_t>(std::strtoul(argv[4], nullptr, 10));
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
      tensorhub::test::send_string(fd, transport.endpoint());
      tensorhub::test::send_string(fd, std::to_string(exposure->descriptors().size()));
      for (const auto& d : exposure->descriptors()) tensorhub::test::send_string(fd, d);
      char c = 0;
      while (read(fd, &c, 1) > 0) {
      }
    }
    transport.deallocate(buffer);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ucx_holder: %s\n", e.what());
    return 1;
  }
  return 0;
}
