// tensorhub bench <scenario>: dispatches to the benchmark scenarios of bench_commands()
// (commands/table.cpp). Every scenario takes the nccl-tests flags of bench/flags.hpp.
#include "common/command_table.hpp"

namespace tensorhub::cli {
namespace {

constexpr const char* kIntro = R"(usage: tensorhub bench <scenario> [options]   (tensorhub bench <scenario> --help)

Every scenario takes the same nccl-tests style flags: -b/--minbytes and -e/--maxbytes (the model or
message size, swept from -b to -e), -f/--stepfactor (size multiplier), -n/--iters, -w/--warmup, --json
FILE. Old spellings stay as aliases: --size S (= -b S -e S), p2p's --begin/--end/--factor, and
--versions (= -n) of stall, elastic and crossdc.
On emulated hosts (network namespaces with capped links): scripts/bench/*.sh, share/doc/benchmarks.md.
)";

}  // namespace

int cmd_bench(const Args& args) { return dispatch("tensorhub bench", kIntro, bench_commands(), args); }

}  // namespace tensorhub::cli
