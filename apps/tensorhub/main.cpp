// tensorhub: command-line front end. The commands, their summaries and examples are one table
// (commands/table.cpp) that makes both the usage text and the dispatch; `tensorhub <command>
// --help` explains each command.
//
// Exit codes: 0 ok; 1 internal error; 2 bad usage or input (one line on stderr); 3 not found;
// 4 transport or timeout; 5 checksum mismatch.
#include <grpc/support/log.h>

#include <boost/program_options/errors.hpp>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "common/command_table.hpp"
#include "tensorhub/core/error.hpp"

namespace {

constexpr const char* kIntro = R"(usage: tensorhub <command> [options]   (tensorhub <command> --help)

TensorHub moves LLM weight versions from trainers to rollout workers by reference:
publishers register their memory, readers pull straight from whoever holds a version.
MPI commands run under mpirun/srun; several of them can share one job (MPMD, `:`) and form one hub.
Options also come from TENSORHUB_<OPTION> and a config file (tensorhub <command> --show-config).
Exit codes: 0 ok, 1 internal error, 2 bad input, 3 not found, 4 transport/timeout, 5 checksum.
)";

// gRPC's own log lines ("E1203 12:00:00 chttp2_server.cc:...") would come before our one-line
// errors: they are dropped unless TENSORHUB_LOG=debug. TensorHub reports every failure itself.
void grpc_log_unless_debug(gpr_log_func_args* args) {
  const char* level = std::getenv("TENSORHUB_LOG");
  if (level != nullptr && std::strcmp(level, "debug") == 0) {
    std::fprintf(stderr, "[grpc %s:%d] %s\n", args->file, args->line, args->message);
  }
}

}  // namespace

int main(int argc, char** argv) {
  using namespace tensorhub::cli;
  gpr_set_log_function(grpc_log_unless_debug);
  Args args(argv + 1, argv + argc);
  if (!args.empty() && args[0] == "--version") args[0] = "version";
  // Errors name the command they came from: "tensorhub pull: ...", "tensorhub bench fanout: ...",
  // or "tensorhub: ..." for a missing or unknown command.
  std::string who = "tensorhub";
  for (const auto& c : top_level_commands()) {
    if (args.empty() || c.name != args[0]) continue;
    who += " " + args[0];
    if (c.subcommands == nullptr || args.size() < 2) break;
    for (const auto& sub : c.subcommands()) {
      if (sub.name == args[1]) who += " " + args[1];
    }
  }
  try {
    return dispatch("tensorhub", kIntro, top_level_commands(), args);
  } catch (const boost::program_options::error& e) {
    std::fprintf(stderr, "%s: %s (see %s --help)\n", who.c_str(), e.what(), who.c_str());
    return 2;
  } catch (const tensorhub::NotFoundError& e) {
    std::fprintf(stderr, "%s: not found: %s\n", who.c_str(), e.what());
    return 3;
  } catch (const tensorhub::UserError& e) {
    std::fprintf(stderr, "%s: %s\n", who.c_str(), e.what());
    return 2;
  } catch (const tensorhub::TransportError& e) {
    std::fprintf(stderr, "%s: transport error: %s\n", who.c_str(), e.what());
    return 4;
  } catch (const tensorhub::ChecksumError& e) {
    std::fprintf(stderr, "%s: %s\n", who.c_str(), e.what());
    return 5;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: internal error: %s\n", who.c_str(), e.what());
    return 1;
  }
}
