// tensorhub: command-line front end. `tensorhub <command> --help` explains each command.
//
// Exit codes: 0 ok; 1 internal error; 2 bad usage or input; 3 not found; 4 transport or
// timeout; 5 checksum mismatch.
#include <boost/program_options/errors.hpp>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "commands.hpp"
#include "tensorhub/config.hpp"
#include "tensorhub/core/error.hpp"

namespace {

constexpr const char* kUsage = R"(usage: tensorhub <command> [options]

TensorHub moves LLM weight versions from trainers to rollout workers by reference:
publishers register their memory, readers pull straight from whoever holds a version.

commands:
  serve     run a standalone coordinator: tensorhub serve --listen 0.0.0.0:7070
  publish   publish versions (synthetic weights or a snapshot) from this job's ranks
            mpirun -n 1 tensorhub publish --synthetic 1GiB --versions 5 --interval 2 : -n 3 tensorhub pull --follow 5
  pull      pull a version (or follow the latest), verified; --out writes an HDF5 snapshot
  snapshot  save | load | verify | inspect HDF5 snapshots (tensorhub snapshot --help)
  status    models, versions, holders, pins, retention: tensorhub status --hub HOST:PORT
  recover   re-seed versions that lost their holders from snapshots: tensorhub recover --snapshot-dir DIR
  demo      trainer + rollout ranks in one MPI job: publish, pull, verify, print a table
            (mpirun -n 6 --mca osc ucx tensorhub demo)
  bench     benchmarks: bench p2p|fanout|stall|elastic|crossdc (tensorhub bench --help)
            p2p: one reader's pull bandwidth vs memcpy and raw MPI_Get; fanout: trainer -> N
            readers, TensorHub vs star/MPI_Bcast/storage; stall: RL-loop weight stalls; elastic:
            newcomers served by peers; crossdc: bytes over a WAN between two datacenters
            (mpirun -n 4 --oversubscribe --mca osc ucx tensorhub bench fanout --size 8MiB)
  probe     this node's GPUs, NICs, NUMA and PCI affinity; under mpirun also the MPI_Get matrix
            (tensorhub probe; mpirun -n 4 --mca osc ucx tensorhub probe --out topo.json)
  version   print the version

Run `tensorhub <command> --help` for the options of a command.
Exit codes: 0 ok, 1 internal error, 2 bad input, 3 not found, 4 transport/timeout, 5 checksum.
)";

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0 ||
      std::strcmp(argv[1], "help") == 0) {
    std::fputs(kUsage, argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  const std::string cmd = argv[1];
  const tensorhub::cli::Args args(argv + 2, argv + argc);
  try {
    if (cmd == "demo") return tensorhub::cli::cmd_demo(args);
    if (cmd == "bench") return tensorhub::cli::cmd_bench(args);
    if (cmd == "serve") return tensorhub::cli::cmd_serve(args);
    if (cmd == "probe") return tensorhub::cli::cmd_probe(args);
    if (cmd == "publish") return tensorhub::cli::cmd_publish(args);
    if (cmd == "pull") return tensorhub::cli::cmd_pull(args);
    if (cmd == "snapshot") return tensorhub::cli::cmd_snapshot(args);
    if (cmd == "status") return tensorhub::cli::cmd_status(args);
    if (cmd == "recover") return tensorhub::cli::cmd_recover(args);
    if (cmd == "version" || cmd == "--version") {
      std::printf("tensorhub %s\n", TENSORHUB_VERSION);
      return 0;
    }
    std::fprintf(stderr, "tensorhub: unknown command '%s' (see tensorhub --help)\n", cmd.c_str());
    return 2;
  } catch (const boost::program_options::error& e) {
    std::fprintf(stderr, "tensorhub %s: %s (see tensorhub %s --help)\n", cmd.c_str(), e.what(), cmd.c_str());
    return 2;
  } catch (const tensorhub::NotFoundError& e) {
    std::fprintf(stderr, "tensorhub %s: not found: %s\n", cmd.c_str(), e.what());
    return 3;
  } catch (const tensorhub::UserError& e) {
    std::fprintf(stderr, "tensorhub %s: %s\n", cmd.c_str(), e.what());
    return 2;
  } catch (const tensorhub::TransportError& e) {
    std::fprintf(stderr, "tensorhub %s: transport error: %s\n", cmd.c_str(), e.what());
    return 4;
  } catch (const tensorhub::ChecksumError& e) {
    std::fprintf(stderr, "tensorhub %s: %s\n", cmd.c_str(), e.what());
    return 5;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tensorhub %s: internal error: %s\n", cmd.c_str(), e.what());
    return 1;
  }
}
