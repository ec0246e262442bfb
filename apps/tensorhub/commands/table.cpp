// The command tables of `tensorhub` (common/command_table.hpp): the top level, the `bench`
// scenarios and the `snapshot` subcommands. Each entry: name, one-line summary, handler, whether
// it runs under mpirun/srun, and its --help example (the listing shows the first line).
#include <array>
#include <cstdio>
#include <string>

#include "common/command_table.hpp"
#include "tensorhub/config.hpp"
#include "tensorhub/core/error.hpp"

namespace tensorhub::cli {
namespace {

int cmd_version(const Args& args) {
  if (!args.empty() && args[0] != "--help" && args[0] != "-h") throw UserError("version takes no arguments");
  if (!args.empty()) {  // --help: the head without the options list (it has none)
    std::string head = help_head("version");
    head.erase(head.rfind("Options"));
    std::fputs(head.c_str(), stdout);
    return 0;
  }
  std::printf("tensorhub %s\n", TENSORHUB_VERSION);
  return 0;
}

// Order matters: the listings follow it.
constexpr std::array kTopLevel{
    Command{"serve", "run a standalone coordinator (no MPI) until SIGINT/SIGTERM", cmd_serve, false,
            "tensorhub serve --listen 0.0.0.0:7070 &  then  TENSORHUB_HUB=$(hostname):7070 mpirun ..."},
    Command{"publish", "publish versions (synthetic weights or a snapshot file) from this job's ranks", cmd_publish,
            true,
            "mpirun -n 1 tensorhub publish --synthetic 1GiB --tensors 64 --versions 5 --interval 2 : -n 3 "
            "tensorhub pull --follow 5"},
    Command{"pull", "pull a version (or follow the latest) from whoever holds it, verified", cmd_pull, true,
            "mpirun -n 1 tensorhub publish --versions 3 --interval 1 : -n 2 tensorhub pull --follow 3\n"
            "mpirun -n 1 tensorhub publish : -n 2 tensorhub pull --group --out policy.h5"},
    Command{"snapshot", "save | load | verify | inspect HDF5 snapshots", cmd_snapshot, false,
            "tensorhub snapshot verify policy.h5", &snapshot_commands},
    Command{"status", "models, versions, holders, pins, retention and workers of a coordinator", cmd_status, false,
            "tensorhub status --hub node0:7070 --holders"},
    Command{"recover", "re-seed versions that lost every holder from HDF5 snapshots", cmd_recover, false,
            "tensorhub recover --hub node0:7070 --snapshot-dir /shared/tensorhub/snapshots"},
    Command{"demo", "trainers and rollouts in one job: publish, pull, verify, print a table", cmd_demo, true,
            "mpirun -n 6 --oversubscribe --mca osc ucx tensorhub demo --size 512MiB --versions 3"},
    Command{"bench",
            "benchmarks: p2p | publish | fanout | stall | elastic | crossdc | coordinator | reshard (nccl-tests flags "
            "-b -e "
            "-f -n -w)",
            cmd_bench, true, "mpirun -n 4 --oversubscribe --mca osc ucx tensorhub bench fanout -b 8MiB",
            &bench_commands},
    Command{"sim", "flow-level simulator: the real coordinator vs ring/tree/star/store/ckpt at up to 1,024 GPUs",
            cmd_sim, false,
            "tensorhub sim --preset netsim --readers 4,8\n"
            "tensorhub sim --preset standalone --readers 8,64,256,1024 --json share/results/sim/standalone.json"},
    Command{"probe", "this node's GPUs, NICs, NUMA and PCI affinity; under mpirun also the MPI_Get matrix", cmd_probe,
            false,
            "tensorhub probe --xml tests/data/topo/gpu8-nic8-2socket.xml\n"
            "mpirun -n 4 --mca osc ucx tensorhub probe -b 8 -e 4MiB -f 4 -n 50 --out topo.json"},
    Command{"version", "print the version", cmd_version, false, "tensorhub version"},
};

constexpr std::array kBench{
    Command{"p2p", "one reader pulls from one holder: memcpy, MPI_Rget (static, dynamic window), Hub::pull",
            cmd_bench_p2p, true,
            "mpirun -n 2 --oversubscribe --mca osc ucx tensorhub bench p2p -b 64MiB -e 1GiB -f 4 -n 5"},
    Command{"publish", "the trainer's stall per publish: publish, publish_async (and its commit) vs memcpy",
            cmd_bench_publish, true, "mpirun -n 1 tensorhub bench publish -b 1GiB -n 7"},
    Command{"fanout", "one trainer -> N readers: TensorHub vs star, MPI_Bcast and a storage rank", cmd_bench_fanout,
            true, "mpirun -n 4 --oversubscribe --mca osc ucx tensorhub bench fanout -b 8MiB"},
    Command{"stall", "RL loop: per-update weight stall, TensorHub vs an MPI_Bcast of every version", cmd_bench_stall,
            true,
            "mpirun -n 4 --oversubscribe --mca osc ucx tensorhub bench stall -b 8MiB -n 3 --period 1 --generate 0.5"},
    Command{"elastic", "readers join one by one: each newcomer's time to the latest version, trainer bytes",
            cmd_bench_elastic, true,
            "mpirun -n 4 --oversubscribe --mca osc ucx tensorhub bench elastic -b 8MiB --delta 1 --period 2"},
    Command{"crossdc", "trainer in one datacenter, readers in two: bytes over the WAN per version", cmd_bench_crossdc,
            true,
            "scripts/netsim/netsim.sh up --hosts 6 --rate 100mbit --dcs 2 --wan-rate 40mbit   (emulated DCs)\n"
            "scripts/netsim/netsim.sh run -- -np 6 --map-by node tensorhub bench crossdc --link-mbit 100 \\\n"
            "  --counters-cmd 'scripts/netsim/netsim.sh counters'        (or scripts/bench/crossdc.sh)"},
    Command{"coordinator", "coordinator load without data: per-chunk acquire vs plan-based pulls, R reader threads",
            cmd_bench_coordinator, false, "tensorhub bench coordinator --readers 64,256,1024 --grpc"},
    Command{"reshard", "a TP=2 reader pulls its box of a TP=8 trainer's shards (dim 0, dim 1) vs the same bytes plain",
            cmd_bench_reshard, true, "mpirun -n 2 --mca osc ucx tensorhub bench reshard -b 256MiB -n 5"},
    Command{"fp8", "FP8 block quantization of a bf16 matrix vs memcpy of the same bytes", cmd_bench_fp8, false,
            "tensorhub bench fp8 --rows 4096 --cols 4096 -n 5"},
};

constexpr std::array kSnapshot{
    Command{"save", "write a version to an HDF5 file from its live holders (readers keep pulling)", cmd_snapshot_save,
            true,
            "mpirun -n 2 tensorhub publish --retain --snapshot-dir snapshots : -n 2 tensorhub snapshot save --out "
            "policy.h5"},
    Command{
        "load", "publish the version stored in a file; this job's ranks become its holders", cmd_snapshot_load, true,
        "mpirun -n 1 tensorhub snapshot load policy-v42.h5 --retain --snapshot-dir snapshots : -n 2 tensorhub pull"},
    Command{"verify", "read every tensor and check every chunk's checksum; exit 5 on a mismatch", cmd_snapshot_verify,
            false, "tensorhub snapshot verify policy-v42.h5"},
    Command{"inspect", "list the version's tensors, dtypes, shapes and attributes", cmd_snapshot_inspect, false,
            "tensorhub snapshot inspect policy-v42.h5 --json"},
};

}  // namespace

CommandTable top_level_commands() { return kTopLevel; }
CommandTable bench_commands() { return kBench; }
CommandTable snapshot_commands() { return kSnapshot; }

}  // namespace tensorhub::cli
