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
  demo     trainer + rollout ranks in one MPI job: publish, pull, verify, print a table
           (mpirun -n 6 --mca osc ucx tensorhub demo)
  bench    benchmarks; `bench p2p`: one reader's pull bandwidth vs memcpy and raw MPI_Get
           (mpirun -n 2 --mca osc ucx tensorhub bench p2p)
  serve    run a standalone coordinator (tensorhub serve --listen 0.0.0.0:7070)
  version  print the version

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
