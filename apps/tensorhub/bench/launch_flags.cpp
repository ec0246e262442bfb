#include "bench/launch_flags.hpp"

#include <array>
#include <cstdlib>
#include <string_view>

extern char** environ;  // NOLINT: POSIX

namespace tensorhub::cli::bench {
namespace {

constexpr std::string_view kPrefix = "OMPI_MCA_";

// Set by mpirun / orted for every launch, whatever the user passed.
bool launcher_internal(std::string_view name) {
  constexpr std::array<std::string_view, 7> kInternal = {"orte_",
                                                         "ess",
                                                         "pmix",
                                                         "initial_wdir",
                                                         "shmem_RUNTIME_QUERY_hint",
                                                         "mpi_oversubscribe",
                                                         "rmaps_base_oversubscribe"};
  for (const auto p : kInternal)
    if (name.starts_with(p)) return true;
  return false;
}

std::string quoted(const std::string& v) {
  if (!v.empty() && v.find_first_of(" \t'\"$;&|<>*?") == std::string::npos) return v;
  std::string out = "'";
  for (const char c : v) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace

std::map<std::string, std::string> mca_seen() {
  std::map<std::string, std::string> out;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string_view kv(*e);
    if (!kv.starts_with(kPrefix)) continue;
    const auto eq = kv.find('=');
    if (eq == std::string_view::npos) continue;
    const auto name = kv.substr(kPrefix.size(), eq - kPrefix.size());
    if (!launcher_internal(name)) out.emplace(std::string(name), std::string(kv.substr(eq + 1)));
  }
  return out;
}

std::string mpirun_flags_seen() {
  std::string flags;
  const char* over = std::getenv("OMPI_MCA_rmaps_base_oversubscribe");
  if (over != nullptr && std::string_view(over) == "1") flags += " --oversubscribe";
  for (const auto& [name, value] : mca_seen()) flags += " --mca " + name + " " + quoted(value);
  return flags;
}

}  // namespace tensorhub::cli::bench
