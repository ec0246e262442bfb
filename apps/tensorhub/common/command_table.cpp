#include "common/command_table.hpp"

#include <cstdio>
#include <iostream>

#include "tensorhub/core/error.hpp"

namespace tensorhub::cli {
namespace {

constexpr std::size_t kNameWidth = 10;

const Command* find(CommandTable table, std::string_view name) {
  for (const auto& c : table) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

std::string_view first_line(std::string_view s) { return s.substr(0, s.find('\n')); }

}  // namespace

std::string command_names(CommandTable table) {
  std::string out;
  for (const auto& c : table) {
    if (!out.empty()) out += ", ";
    out += c.name;
  }
  return out;
}

std::string command_listing(CommandTable table) {
  std::string out;
  for (const auto& c : table) {
    std::string name(c.name);
    name.resize(std::max(kNameWidth, name.size() + 1), ' ');
    out += "  " + name + std::string(c.summary) + (c.mpi ? " [MPI]" : "") + "\n";
    if (!c.example.empty()) out += "  " + std::string(kNameWidth, ' ') + std::string(first_line(c.example)) + "\n";
  }
  return out;
}

int dispatch(std::string_view prog, std::string_view intro, CommandTable table, const Args& args) {
  const std::string see = "; see " + std::string(prog) + " --help)";
  if (args.empty()) throw UserError("missing command (one of: " + command_names(table) + see);
  const std::string& name = args[0];
  if (name == "--help" || name == "-h" || name == "help") {
    if (name == "help" && args.size() > 1) return dispatch(prog, intro, table, {args[1], "--help"});
    std::cout << intro << "\ncommands: ([MPI]: run under mpirun or srun)\n" << command_listing(table);
    return 0;
  }
  const Command* c = find(table, name);
  if (c == nullptr) throw UserError("unknown command '" + name + "' (one of: " + command_names(table) + see);
  return c->handler(Args(args.begin() + 1, args.end()));
}

std::string help_head(std::string_view path, std::string_view details) {
  CommandTable table = top_level_commands();
  const Command* c = nullptr;
  std::string_view rest = path;
  while (!rest.empty()) {
    const auto space = rest.find(' ');
    c = find(table, rest.substr(0, space));
    if (c == nullptr) throw ContractViolation("help_head: no command '" + std::string(path) + "' in the tables");
    rest = space == std::string_view::npos ? std::string_view() : rest.substr(space + 1);
    if (!rest.empty()) {
      if (c->subcommands == nullptr)
        throw ContractViolation("help_head: '" + std::string(path) + "' has no subcommands");
      table = c->subcommands();
    }
  }
  if (c == nullptr) throw ContractViolation("help_head: empty command path");
  std::string out = "tensorhub " + std::string(path) + ": " + std::string(c->summary) +
                    (c->mpi ? " (MPI: run under mpirun or srun)" : "") + "\n" + std::string(details);
  if (!details.empty() && details.back() != '\n') out += '\n';
  std::string_view ex = c->example;
  const char* label = "Example: ";
  while (!ex.empty()) {
    out += label + std::string(first_line(ex)) + "\n";
    label = "         ";
    const auto nl = ex.find('\n');
    ex = nl == std::string_view::npos ? std::string_view() : ex.substr(nl + 1);
  }
  return out + "Options";
}

}  // namespace tensorhub::cli
