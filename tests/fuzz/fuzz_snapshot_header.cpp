// libFuzzer target over the snapshot header parsing (see snapshot_header_target.hpp). Built
// only with -DTENSORHUB_FUZZ=ON and clang:
//   CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DTENSORHUB_FUZZ=ON
//   cmake --build build-fuzz --target fuzz_snapshot_header
//   build-fuzz/tests/fuzz/fuzz_snapshot_header -max_total_time=180 -max_len=4096 \
//       /tmp/fuzz-work tests/fuzz/corpus
#include <cstddef>
#include <cstdint>

#include "snapshot_header_target.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return tensorhub::snapshot::fuzz::run_header_input(data, size);
}
