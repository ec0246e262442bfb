#include "common/options.hpp"

#include <cctype>
#include <cmath>
#include <cstdint>
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

// Boost's lexical_cast reads "-1" as 2^64-1 for an unsigned option (`--tensors -1` became 4 billion
// tensors): refuse a sign on every unsigned value, and a negative or non-finite number of seconds
// (every double option is a duration), naming the option and where the value came from.
void check_numbers(const po::options_description& desc, const po::parsed_options& parsed, const std::string& where) {
  for (const auto& o : parsed.options) {
    const auto* d = desc.find_nothrow(o.string_key, false);
    if (d == nullptr || o.value.empty()) continue;
    const auto* typed = dynamic_cast<const po::typed_value_base*>(d->semantic().get());
    if (typed == nullptr) continue;
    const auto& type = typed->value_type();
    const std::string& text = o.value.front();
    const auto start = text.find_first_not_of(" \t");
    const bool sign = start != std::string::npos && (text[start] == '-' || text[start] == '+');
    const std::string name = "--" + d->long_name() + where;
    if ((type == typeid(std::uint32_t) || type == typeid(std::uint64_t) || type == typeid(unsigned long long) ||
         type == typeid(std::uint16_t)) &&
        sign) {
      throw UserError(name + " must be a whole number of at least 0, not '" + text + "'");
    }
    if (type == typeid(double)) {
      std::size_t pos = 0;
      double x = 0;
      try {
        x = std::stod(text, &pos);
      } catch (const std::exception&) {
        continue;  // boost reports the bad value itself
      }
      if (x < 0 || !std::isfinite(x))
        throw UserError(name + " must be a finite number of at least 0, not '" + text + "'");
    }
  }
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
  const auto cli = parser.run();
  check_numbers(desc, cli, "");
  po::store(cli, vm);
  if (vm.count("help")) {
    std::cout << desc << "\n"
              << "Every option can also come from the environment (TENSORHUB_<OPTION>, e.g. TENSORHUB_HUB)\n"
              << "or a config file; the command line wins, then the environment, then the file.\n";
    return false;
  }
  const auto from_cli = keys_of(vm);
  // A bad value in TENSORHUB_<OPTION> is a usage error that names the variable.
  try {
    const auto env_parsed = po::parse_environment(desc, [&desc](const std::string& var) -> std::string {
      if (var.rfind("TENSORHUB_", 0) != 0) return "";
      for (const auto& o : desc.options()) {
        const auto& name = o->long_name();
        if (name == "help" || name == "config" || name == "show-config") continue;
        if (env_name(name) == var) return name;
      }
      return "";
    });
    for (const auto& o : env_parsed.options) {
      po::parsed_options one(&desc);
      one.options.push_back(o);
      check_numbers(desc, one, " (from " + env_name(o.string_key) + ")");
    }
    po::store(env_parsed, vm);
  } catch (const po::error_with_option_name& e) {
    std::string name = e.get_option_name();
    name.erase(0, name.find_first_not_of('-'));
    throw UserError("in the environment: " + env_name(name) + ": " + e.what());
  } catch (const po::error& e) {
    throw UserError(std::string("in the environment (TENSORHUB_<OPTION>): ") + e.what());
  }
  const std::string file = vm.count("config") ? vm["config"].as<std::string>() : default_config_file();
  const auto from_env = keys_of(vm);
  if (!file.empty()) {
    const auto from_file = config_options(command, desc, file);
    check_numbers(desc, from_file, " (in " + file + ")");
    po::store(from_file, vm);
  }
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

void check_host_port(const std::string& flag, const std::string& address, bool any_port, bool list) {
  if (list) {
    std::size_t start = 0;
    for (;;) {
      const auto comma = address.find(',', start);
      check_host_port(flag, address.substr(start, comma - start), any_port, false);
      if (comma == std::string::npos) return;
      start = comma + 1;
    }
  }
  const auto colon = address.rfind(':');
  const auto bad = [&](const std::string& why) { throw UserError(flag + " " + address + ": " + why); };
  if (colon == std::string::npos || colon == 0) bad("expected HOST:PORT");
  const std::string port = address.substr(colon + 1);
  if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos) {
    bad("the port must be a number from " + std::string(any_port ? "0" : "1") + " to 65535");
  }
  const unsigned long p = std::stoul(port);
  if (p > 65535 || (p == 0 && !any_port)) {
    bad("port " + port + " is out of range (" + (any_port ? "0" : "1") + " to 65535" +
        (any_port ? ", 0 = any free port)" : ")"));
  }
}

std::string config_file_in_use(const po::variables_map& vm) {
  return vm.count("config") ? vm["config"].as<std::string>() : default_config_file();
}

}  // namespace tensorhub::cli
