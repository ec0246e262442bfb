// tensorhub bench <scenario>: dispatches to the benchmark scenarios (cmd_bench_*.cpp).
#include <iostream>

#include "commands.hpp"
#include "tensorhub/core/error.hpp"

namespace tensorhub::cli {

namespace {

constexpr const char* kBenchUsage = R"(usage: tensorhub bench <scenario> [options]   (tensorhub bench <scenario> --help)
scenarios:
  p2p      one reader pulls from one holder; memcpy, MPI_Get (static and dynamic windows) and
           Hub::pull in the same run
           mpirun -n 2 --mca osc ucx tensorhub bench p2p -b 64MiB -e 1GiB -f 4 -n 5
  fanout   one trainer -> N readers: TensorHub (relayed pulls) vs star sends vs MPI_Bcast vs a
           storage rank (HDF5 file); last-reader time / (S/R), trainer bytes, every byte checked
           mpirun -n 4 --oversubscribe --mca osc ucx tensorhub bench fanout --size 8MiB
  stall    RL loop: a version every --period s, rollouts generate --generate s then pull the
           latest; per-rollout stall, TensorHub vs an MPI_Bcast of every version to all rollouts
           mpirun -n 4 --oversubscribe --mca osc ucx tensorhub bench stall --size 8MiB --versions 3
  elastic  readers join one by one (every --delta s) while versions keep coming; each
           newcomer's time to the latest version and the trainer bytes it caused
           mpirun -n 4 --oversubscribe --mca osc ucx tensorhub bench elastic --size 8MiB --delta 1
  crossdc  trainer in DC 0, readers in two DCs (TENSORHUB_DC labels): bytes over the WAN per
           version (--counters-cmd) and time, TensorHub vs star vs MPI_Bcast
           scripts/bench/crossdc.sh (emulated datacenters, scripts/netsim)
On emulated hosts (network namespaces with capped links): scripts/bench/*.sh, share/doc/benchmarks.md.
)";

}  // namespace

int cmd_bench(const Args& args) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    std::cout << kBenchUsage;
    return args.empty() ? 2 : 0;
  }
  const Args rest(args.begin() + 1, args.end());
  if (args[0] == "p2p") return cmd_bench_p2p(rest);
  if (args[0] == "fanout") return cmd_bench_fanout(rest);
  if (args[0] == "stall") return cmd_bench_stall(rest);
  if (args[0] == "elastic") return cmd_bench_elastic(rest);
  if (args[0] == "crossdc") return cmd_bench_crossdc(rest);
  throw UserError("unknown benchmark '" + args[0] + "' (available: p2p, fanout, stall, elastic, crossdc)");
}

}  // namespace tensorhub::cli
