// Placeholders for the scenarios still being written (removed once they exist).
#include "commands.hpp"
#include "tensorhub/core/error.hpp"

namespace tensorhub::cli {
int cmd_bench_stall(const Args&) { throw UserError("bench stall: not implemented yet"); }
int cmd_bench_elastic(const Args&) { throw UserError("bench elastic: not implemented yet"); }
int cmd_bench_crossdc(const Args&) { throw UserError("bench crossdc: not implemented yet"); }
}  // namespace tensorhub::cli
