// Option parsing shared by the commands, with one precedence everywhere:
//   command line  >  environment (TENSORHUB_<OPTION>)  >  config file  >  built-in defaults.
//
// Environment: an option `--max-readers` is read from TENSORHUB_MAX_READERS (upper case, '-' as
// '_'); only options the command has are looked at. Config file: `--config FILE`, else
// TENSORHUB_CONFIG, else $XDG_CONFIG_HOME/tensorhub/tensorhub.conf (~/.config/...) when it
// exists. `key = value` lines; keys under `[pull]`, `[publish]`, ... apply to that command only
// and win over keys outside a section; keys a command does not have are ignored
// (share/tensorhub/tensorhub.conf.example documents them).
#pragma once

#include <boost/program_options.hpp>
#include <string>

#include "common/commands.hpp"

namespace tensorhub::cli {

namespace po = boost::program_options;

// Adds --config, --show-config and --help to `desc`, parses `args` with the precedence above and notifies.
// Returns false when the command should exit 0 without running: --help (prints `desc`) or
// --show-config (prints each option's value and its source: command line, environment, config
// file or default).
bool parse_options(const std::string& command, po::options_description& desc, const Args& args, po::variables_map& vm,
                   const po::positional_options_description* positional = nullptr);

// `address` is HOST:PORT (or [V6]:PORT) with a port in 1..65535 (0 too when `any_port`), else
// UserError naming `flag`. `list`: a comma-separated list of them (--hub A,B).
void check_host_port(const std::string& flag, const std::string& address, bool any_port, bool list = false);

// The config file that applies (empty if none), for messages.
std::string config_file_in_use(const po::variables_map& vm);

}  // namespace tensorhub::cli
