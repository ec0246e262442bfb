// Counters (per-host interface bytes, --counters-cmd) and the ranks' host and DC labels.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "bench/bench_common.hpp"
#include "tensorhub/core/env.hpp"
#include "tensorhub/mpi/mpi.hpp"

namespace tensorhub::cli::bench {
namespace {

// tx/rx bytes of `iface` in this network namespace, from /proc/net/dev.
std::optional<std::pair<double, double>> iface_bytes(const std::string& iface) {
  std::ifstream in("/proc/net/dev");
  std::string line;
  while (std::getline(in, line)) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string name = line.substr(0, colon);
    name.erase(0, name.find_first_not_of(' '));
    if (name != iface) continue;
    std::istringstream fields(line.substr(colon + 1));
    std::vector<double> v;
    double x = 0;
    while (fields >> x) v.push_back(x);
    if (v.size() < 9) return std::nullopt;
    return std::make_pair(v[8], v[0]);
  }
  return std::nullopt;
}

}  // namespace

Counters::Counters(const CommonFlags& f, int rank) : cmd_(f.counters_cmd), rank_(rank) {
  if (f.iface == "auto") {
    iface_ = iface_bytes("th-eth0") ? "th-eth0" : "";
  } else if (f.iface != "none") {
    iface_ = f.iface;
    if (!iface_bytes(iface_)) throw UserError("--iface " + iface_ + ": no such interface in /proc/net/dev");
  }
}

std::map<std::string, double> Counters::sample() const {
  std::map<std::string, double> out;
  if (const auto b = iface_.empty() ? std::nullopt : iface_bytes(iface_)) {
    out["host_tx"] = b->first;
    out["host_rx"] = b->second;
  }
  if (rank_ != 0 || cmd_.empty()) return out;
  FILE* p = popen(cmd_.c_str(), "r");
  if (p == nullptr) throw UserError("--counters-cmd: cannot run '" + cmd_ + "'");
  char key[256];
  double value = 0;
  while (std::fscanf(p, "%255s %lf", key, &value) == 2) out[std::string("cmd:") + key] = value;
  if (pclose(p) != 0) throw UserError("--counters-cmd '" + cmd_ + "' failed");
  return out;
}

void Counters::start() { before_ = sample(); }

nlohmann::json Counters::stop(MPI_Comm comm) {
  const auto after = sample();
  std::vector<double> mine;
  if (!iface_.empty())
    mine = {after.at("host_tx") - before_.at("host_tx"), after.at("host_rx") - before_.at("host_rx")};
  const auto rows = gather_rows(comm, mine);
  nlohmann::json j{{"host_tx_bytes", nullptr}, {"host_rx_bytes", nullptr}, {"counters", nullptr}};
  if (rank_ != 0) return j;
  if (!iface_.empty()) {
    j["iface"] = iface_;
    j["host_tx_bytes"] = nlohmann::json::array();
    j["host_rx_bytes"] = nlohmann::json::array();
    for (const auto& r : rows) {
      j["host_tx_bytes"].push_back(r.size() == 2 ? nlohmann::json(r[0]) : nlohmann::json());
      j["host_rx_bytes"].push_back(r.size() == 2 ? nlohmann::json(r[1]) : nlohmann::json());
    }
  }
  if (!cmd_.empty()) {
    j["counters"] = nlohmann::json::object();
    for (const auto& [k, v] : after) {
      if (k.rfind("cmd:", 0) == 0 && before_.count(k)) j["counters"][k.substr(4)] = v - before_.at(k);
    }
  }
  return j;
}

nlohmann::json rank_labels(MPI_Comm comm, const std::vector<std::string>& roles) {
  const auto hosts = gather_strings(comm, mpi::processor_name());
  const auto dcs = gather_strings(comm, env::text("TENSORHUB_DC").value_or(""));
  nlohmann::json out = nlohmann::json::array();
  for (std::size_t r = 0; r < hosts.size(); ++r) {
    out.push_back({{"rank", r}, {"role", r < roles.size() ? roles[r] : "reader"}, {"host", hosts[r]}, {"dc", dcs[r]}});
  }
  return out;
}

}  // namespace tensorhub::cli::bench
