#include "common/options.hpp"

#include <cctype>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>

#include "tensorhub/core/env.hpp"
#include "tensorhub/core/error.hpp"

namespace tensorhub::cli {
namespace {

std::string env_name(const std::string& option) {
  std::string out = "TENSORHUB_";
  for (const char c : option) out += c == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

std::string default_config_file() {
  if (const auto c = env::text("TENSORHUB_CONFIG")) return *c;
  std::filesystem::path dir;
  if (const auto x = env::text("XDG_CONFIG_HOME")) {
    dir = *x;
  } else if (const auto h = env::text("HOME")) {
    dir = std::filesystem::path(*h) / ".config";
  } else {
    return "";
  }
  const auto p = dir / "tensorhub" / "tensorhub.conf";
  std::error_code ec;
  return std::filesystem::is_regular_file(p, ec) ? p.string() : "";
}

// Options from the config file: `[command]` keys win over keys outside a section; unknown keys
// (options of other commands) are ignored.
po::parsed_options config_options(const std::string& command, const po::options_description& desc,
                                  const std::string& path) {
  std::ifstream in(path);
  if (!in) throw UserError("cannot read config file '" + path + "'");
  const po::options_description none;
  const auto parsed = po::parse_config_file(in, none, /*allow_unregistered=*/true);
  std::map<std::string, std::string> global;
  std::map<std::string, std::string> mine;
  for (const auto& o : parsed.options) {
    if (o.value.empty()) continue;
    const auto dot = o.string_key.find('.');
    if (dot == std::string::npos) {
      global[o.string_key] = o.value.front();
    } else if (o.string_key.substr(0, dot) == command) {
      mine[o.string_key.substr(dot + 1)] = o.value.front();
    }
  }
  for (const auto& [k, v] : global) mine.emplace(k, v);  // section keys stay
  po::parsed_options out(&desc);
  for (const auto& [k, v] : mine) {
    if (k == "config" || k == "help" || desc.find_nothrow(k, false) == nullptr) continue;
    po::option opt;
    opt.string_key = k;
    opt.value.push_back(v);
    opt.original_tokens = {k, v};
    out.options.push_back(std::move(opt));
  }
  return out;
}

std::string value_text(const boost::any& v) {
  if (const auto* s = boost::any_cast<std::string>(&v)) return *s;
  if (const auto* b = boost::any_cast<bool>(&v)) return *b ? "true" : "false";
  if (const auto* d = boost::any_cast<double>(&v)) return std::to_string(*d);
  if (const auto* u = boost::any_cast<std::uint32_t>(&v)) return std::to_string(*u);
  if (const auto* u = boost::any_cast<std::uint64_t>(&v)) return std::to_string(*u);
  if (const auto* i = boost::any_cast<int>(&v)) return std::to_string(*i);
  return "(set)";
}

std::set<std::string> keys_of(const po::variables_map& vm) {
  std::set<std::string> out;
  for (const auto& [k, v] : vm) {
    if (!v.defaulted()) out.insert(k);
  }
  return out;
}

}  // namespace

bool parse_options(const std::string& command, po::options_description& desc, const Args& args, po::variables_map& vm,
                   const po::positional_options_description* positional) {
  desc.add_options()("help,h", "show this help")(
      "config", po::value<std::string>(),
      "config file (default: $TENSORHUB_CONFIG, else ~/.config/tensorhub/tensorhub.conf if present)")(
      "show-config", "print every option's value and where it came from, then exit");
  auto parser = po::command_line_parser(args).options(desc);
  if (positional != nullptr) parser.positional(*positional);
  po::store(parser.run(), vm);
  if (vm.count("help")) {
    std::cout << desc << "\n"
              << "Every option can also come from the environment (TENSORHUB_<OPTION>, e.g. TENSORHUB_HUB)\n"
              << "or a config file; the command line wins, then the environment, then the file.\n";
    return false;
  }
  const auto from_cli = keys_of(vm);
  // A bad value in TENSORHUB_<OPTION> is a usage error that names the variable.
  try {
    po::store(po::parse_environment(desc,
                                    [&desc](const std::string& var) -> std::string {
                                      if (var.rfind("TENSORHUB_", 0) != 0) return "";
                                      for (const auto& o : desc.options()) {
                                        const auto& name = o->long_name();
                                        if (name == "help" || name == "config" || name == "show-config") continue;
                                        if (env_name(name) == var) return name;
                                      }
                                      return "";
                                    }),
              vm);
  } catch (const po::error_with_option_name& e) {
    std::string name = e.get_option_name();
    name.erase(0, name.find_first_not_of('-'));
    throw UserError("in the environment: " + env_name(name) + ": " + e.what());
  } catch (const po::error& e) {
    throw UserError(std::string("in the environment (TENSORHUB_<OPTION>): ") + e.what());
  }
  const std::string file = vm.count("config") ? vm["config"].as<std::string>() : default_config_file();
  const auto from_env = keys_of(vm);
  if (!file.empty()) po::store(config_options(command, desc, file), vm);
  if (vm.count("show-config")) {
    std::cout << "tensorhub " << command << ": effective options"
              << (file.empty() ? " (no config file)" : " (config file " + file + ")") << "\n";
    for (const auto& o : desc.options()) {
      const auto& name = o->long_name();
      if (name == "help" || name == "config" || name == "show-config") continue;
      const auto it = vm.find(name);
      if (it == vm.end() || it->second.empty()) {
        std::cout << "  " << name << " = (unset)\n";
        continue;
      }
      const char* source = from_cli.count(name)      ? "command line"
                           : from_env.count(name)    ? "environment"
                           : !it->second.defaulted() ? "config file"
                                                     : "default";
      std::cout << "  " << name << " = " << value_text(it->second.value()) << "  (" << source << ")\n";
    }
    return false;
  }
  po::notify(vm);
  return true;
}

std::string config_file_in_use(const po::variables_map& vm) {
  return vm.count("config") ? vm["config"].as<std::string>() : default_config_file();
}

}  // namespace tensorhub::cli
