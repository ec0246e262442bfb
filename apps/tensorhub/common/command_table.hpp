// The command tables of the `tensorhub` tool. Every level of subcommands (the top level, `bench`
// scenarios, `snapshot` subcommands; all in commands/table.cpp) is one table whose entries give a
// command's name, its one-line summary, its handler, whether it runs under mpirun/srun, and the
// example its --help prints. The usage listings, the dispatch, the "unknown command" errors and
// the head of every `--help` text are all made from these tables, so a command is added in one
// place.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "common/commands.hpp"

namespace tensorhub::cli {

struct Command;
using CommandTable = std::span<const Command>;

struct Command {
  std::string_view name;
  std::string_view summary;  // one line, no final period
  int (*handler)(const Args&) = nullptr;
  bool mpi = false;                         // runs under mpirun / srun (else a plain process)
  std::string_view example;                 // one or more lines; the listing shows the first
  CommandTable (*subcommands)() = nullptr;  // a command with its own table (bench, snapshot)
};

// The tables (commands/table.cpp).
CommandTable top_level_commands();
CommandTable bench_commands();
CommandTable snapshot_commands();

// "  name      summary [MPI]\n            first example line\n" for every entry.
std::string command_listing(CommandTable table);
// "a, b, c": the names, for error messages.
std::string command_names(CommandTable table);

// Runs the command `args[0]` of `table` with the remaining arguments. `prog` is what precedes it
// ("tensorhub", "tensorhub bench"), `intro` the text above the listing in `prog --help`.
//   no argument          UserError "missing command (one of: ...; see PROG --help)"
//   --help | -h | help   prints intro + listing to stdout, returns 0 (`help NAME`: NAME --help)
//   unknown name         UserError "unknown command 'x' (one of: ...; see PROG --help)"
int dispatch(std::string_view prog, std::string_view intro, CommandTable table, const Args& args);

// The head of `tensorhub PATH --help` for the options_description: "tensorhub PATH: SUMMARY
// (MPI: run under mpirun or srun)\n" + details + "Example: EXAMPLE\n" + "Options". PATH is
// looked up in the tables ("pull", "bench fanout"); a path that is not there is a bug
// (ContractViolation).
std::string help_head(std::string_view path, std::string_view details = {});

}  // namespace tensorhub::cli
