// tensorhub bench fp8: the FP8 quantizer's speed (tensorhub/core/fp8.hpp) against memcpy of the
// same bf16 bytes, in the same run: a rows x cols bf16 matrix quantized to e4m3fn or e5m2 with a
// scale per block, -n timed rounds of each (medians), GB/s of bf16 input and the ratio. Not an
// MPI command.
#include "tensorhub/core/fp8.hpp"

#include <boost/program_options.hpp>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <vector>

#include "bench/bench_common.hpp"
#include "common/command_table.hpp"
#include "common/commands.hpp"
#include "common/options.hpp"
#include "common/report.hpp"
#include "tensorhub/core/error.hpp"
#include "tensorhub/core/units.hpp"

namespace po = boost::program_options;

namespace tensorhub::cli {
namespace {

using Clock = std::chrono::steady_clock;

template <class F>
double median_seconds(std::uint32_t rounds, F&& f) {
  std::vector<double> s;
  for (std::uint32_t i = 0; i <= rounds; ++i) {  // one untimed round first
    const auto t0 = Clock::now();
    f();
    if (i > 0) s.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
  }
  return bench::median(s);
}

}  // namespace

int cmd_bench_fp8(const Args& args) {
  Fp8Blocks b{4096, 4096, 128, 128};
  std::uint32_t rounds = 5;
  std::string format = "e4m3fn";
  std::string json;
  po::options_description desc(help_head("bench fp8",
                                         "Quantizes a bf16 matrix to FP8 with a float32 scale per block and copies the "
                                         "same bytes with memcpy,\nin the same run: GB/s of bf16 input and the ratio. "
                                         "Not an MPI command.\n"));
  desc.add_options()("rows", po::value(&b.rows)->default_value(b.rows), "rows of the bf16 matrix")(
      "cols", po::value(&b.cols)->default_value(b.cols), "columns")(
      "block-rows", po::value(&b.block_rows)->default_value(b.block_rows), "rows per scale block (1: per-row scales)")(
      "block-cols", po::value(&b.block_cols)->default_value(b.block_cols), "columns per scale block")(
      "format", po::value(&format)->default_value(format), "e4m3fn or e5m2")(
      "iters,n", po::value(&rounds)->default_value(rounds), "timed rounds of each (medians)")(
      "json", po::value(&json), "also write the JSON to this file");
  po::variables_map vm;
  if (!parse_options("bench", desc, args, vm)) return 0;
  if (format != "e4m3fn" && format != "e5m2") throw UserError("--format: '" + format + "' is not e4m3fn or e5m2");
  if (rounds == 0) throw UserError("-n/--iters must be at least 1");
  validate(b);
  if (b.elements() > (std::size_t{1} << 31)) throw UserError("--rows x --cols: at most 2^31 elements");
  const auto f = format == "e4m3fn" ? Fp8Format::kE4M3FN : Fp8Format::kE5M2;
  std::vector<std::uint16_t> x(b.elements());
  std::uint32_t h = 1;
  for (auto& v : x) {  // bf16 values of both signs over 2^-20..2^20
    h = h * 1664525u + 1013904223u;
    v = static_cast<std::uint16_t>(((h >> 16) & 0x8000) | ((107 + (h >> 8) % 40) << 7) | (h & 0x7F));
  }
  std::vector<std::uint16_t> copy(x.size());
  std::vector<std::uint8_t> q(x.size());
  std::vector<float> scales(b.scales());
  const double bytes = static_cast<double>(x.size()) * 2;
  const double memcpy_s = median_seconds(rounds, [&] { std::memcpy(copy.data(), x.data(), x.size() * 2); });
  const double quantize_s = median_seconds(rounds, [&] { quantize_bf16(x, b, f, q, scales); });
  Table table({"method", "bf16 bytes", "median s", "GB/s of bf16", "vs memcpy"});
  table.add({"memcpy", format_bytes(static_cast<std::uint64_t>(bytes)), fmt(memcpy_s, 4),
             fmt(bytes / memcpy_s / 1e9, 2), "1.00"});
  table.add({"quantize " + format, format_bytes(static_cast<std::uint64_t>(bytes)), fmt(quantize_s, 4),
             fmt(bytes / quantize_s / 1e9, 2), fmt(quantize_s / memcpy_s, 2)});
  std::printf("# tensorhub bench fp8 --rows %lld --cols %lld --block-rows %lld --block-cols %lld --format %s -n %u\n",
              static_cast<long long>(b.rows), static_cast<long long>(b.cols), static_cast<long long>(b.block_rows),
              static_cast<long long>(b.block_cols), format.c_str(), rounds);
  table.print(stdout);
  const nlohmann::json j{{"benchmark", "fp8"},
                         {"rows", b.rows},
                         {"cols", b.cols},
                         {"block_rows", b.block_rows},
                         {"block_cols", b.block_cols},
                         {"format", format},
                         {"rounds", rounds},
                         {"bf16_bytes", bytes},
                         {"memcpy_s", memcpy_s},
                         {"quantize_s", quantize_s},
                         {"quantize_gbps", bytes / quantize_s / 1e9},
                         {"ratio_memcpy", quantize_s / memcpy_s}};
  std::printf("%s\n", j.dump().c_str());
  if (!json.empty()) write_json_file(json, j);
  return 0;
}

}  // namespace tensorhub::cli
