// JSON codecs and the topology file (format: share/doc/topology.md, "Topology file").
#include "tensorhub/topo/topology_file.hpp"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>
#include <stdexcept>

#include "tensorhub/topo/error.hpp"

namespace tensorhub::topo {
namespace {

using nlohmann::json;

constexpr const char* kFormat = "tensorhub-topology";

std::string hex4(std::uint16_t v) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "%04x", static_cast<unsigned>(v));
  return buf;
}

std::uint16_t from_hex4(const json& j, const char* key) {
  const std::string s = j.value(key, std::string("0"));
  std::size_t used = 0;
  unsigned long v = 0;
  try {
    v = std::stoul(s, &used, 16);
  } catch (const std::logic_error&) {
    used = 0;
  }
  if (used != s.size() || v > 0xffff)
    throw std::invalid_argument(std::string(key) + ": '" + s + "' is not 4 hex digits");
  return static_cast<std::uint16_t>(v);
}

json device_json(const Device& d, std::size_t index) {
  return {{"index", index},
          {"pci_busid", d.pci_busid},
          {"vendor_id", hex4(d.vendor_id)},
          {"device_id", hex4(d.device_id)},
          {"pci_class", hex4(d.pci_class)},
          {"vendor", d.vendor},
          {"model", d.model},
          {"os_devices", d.os_devices},
          {"numa", d.numa},
          {"package", d.package}};
}

Device device_from(const json& j) {
  Device d;
  d.pci_busid = j.value("pci_busid", "");
  d.vendor_id = from_hex4(j, "vendor_id");
  d.device_id = from_hex4(j, "device_id");
  d.pci_class = from_hex4(j, "pci_class");
  d.vendor = j.value("vendor", "");
  d.model = j.value("model", "");
  d.os_devices = j.value("os_devices", std::vector<std::string>{});
  d.numa = j.value("numa", -1);
  d.package = j.value("package", -1);
  return d;
}

using Cube = std::vector<std::vector<std::vector<double>>>;

json cube_json(const Cube& c) {
  json out = json::array();
  for (const auto& row : c) {
    json r = json::array();
    for (const auto& cell : row) {
      json v = json::array();
      for (double x : cell) v.push_back(std::isfinite(x) ? json(x) : json(nullptr));
      r.push_back(std::move(v));
    }
    out.push_back(std::move(r));
  }
  return out;
}

Cube cube_from(const json& j, std::size_t n, std::size_t sizes, const char* key) {
  Cube c;
  if (!j.is_array() || j.size() != n)
    throw std::invalid_argument(std::string(key) + ": expected " + std::to_string(n) + " rows");
  for (const auto& row : j) {
    if (!row.is_array() || row.size() != n) throw std::invalid_argument(std::string(key) + ": expected square matrix");
    auto& r = c.emplace_back();
    for (const auto& cell : row) {
      if (!cell.is_array() || cell.size() != sizes) {
        throw std::invalid_argument(std::string(key) + ": expected one value per size");
      }
      auto& v = r.emplace_back();
      for (const auto& x : cell) v.push_back(x.is_null() ? std::numeric_limits<double>::quiet_NaN() : x.get<double>());
    }
  }
  return c;
}

}  // namespace

void to_json(json& j, const NodeTopology& node) {
  json gpus = json::array();
  for (std::size_t g = 0; g < node.gpus.size(); ++g) {
    json d = device_json(node.gpus[g], g);
    const auto best = g < node.gpu_nic.size() ? best_nic_affinity(node, g) : std::nullopt;
    d["nearest_nics"] = best ? nearest_nics(node, g) : std::vector<std::size_t>{};
    d["nic_affinity"] = best ? json(std::string(to_string(*best))) : json(nullptr);
    gpus.push_back(std::move(d));
  }
  json nics = json::array();
  for (std::size_t n = 0; n < node.nics.size(); ++n) nics.push_back(device_json(node.nics[n], n));
  json accels = json::array();
  for (std::size_t a = 0; a < node.accelerators.size(); ++a) accels.push_back(device_json(node.accelerators[a], a));
  for (std::size_t n = 0; n < node.nics.size(); ++n) nics[n]["rdma"] = rdma_capable(node.nics[n]);
  json matrix = json::array();
  for (const auto& row : node.gpu_nic) {
    json r = json::array();
    for (Affinity a : row) r.push_back(std::string(to_string(a)));
    matrix.push_back(std::move(r));
  }
  j = {{"hostname", node.hostname},
       {"source", node.source},
       {"counts",
        {{"packages", node.packages},
         {"numa_nodes", node.numa_nodes},
         {"cores", node.cores},
         {"pus", node.pus},
         {"gpus", node.gpus.size()},
         {"nics", node.nics.size()},
         {"accelerators", node.accelerators.size()}}},
       {"memory_bytes", node.memory_bytes},
       {"gpus", std::move(gpus)},
       {"nics", std::move(nics)},
       {"accelerators", std::move(accels)},
       {"gpu_nic_affinity", std::move(matrix)}};
}

void from_json(const json& j, NodeTopology& node) {
  node = NodeTopology{};
  node.hostname = j.value("hostname", "");
  node.source = j.value("source", "");
  const json counts = j.value("counts", json::object());
  node.packages = counts.value("packages", 0u);
  node.numa_nodes = counts.value("numa_nodes", 0u);
  node.cores = counts.value("cores", 0u);
  node.pus = counts.value("pus", 0u);
  node.memory_bytes = j.value("memory_bytes", std::uint64_t{0});
  for (const auto& d : j.value("gpus", json::array())) node.gpus.push_back(device_from(d));
  for (const auto& d : j.value("nics", json::array())) node.nics.push_back(device_from(d));
  for (const auto& d : j.value("accelerators", json::array())) node.accelerators.push_back(device_from(d));
  const json matrix = j.value("gpu_nic_affinity", json::array());
  if (matrix.size() != node.gpus.size()) {
    throw std::invalid_argument("gpu_nic_affinity: expected one row per GPU (" + std::to_string(node.gpus.size()) +
                                ")");
  }
  for (const auto& row : matrix) {
    if (row.size() != node.nics.size()) {
      throw std::invalid_argument("gpu_nic_affinity: expected one entry per NIC (" + std::to_string(node.nics.size()) +
                                  ")");
    }
    auto& r = node.gpu_nic.emplace_back();
    for (const auto& a : row) r.push_back(affinity_from_string(a.get<std::string>()));
  }
}

void to_json(json& j, const Labels& l) {
  j = {{"host", l.host}, {"dc", l.dc}, {"rack", l.rack}, {"numa", l.numa}, {"gpu", l.gpu}, {"process", l.process}};
}

void from_json(const json& j, Labels& l) {
  l.host = j.value("host", "");
  l.dc = j.value("dc", "");
  l.rack = j.value("rack", "");
  l.numa = j.value("numa", -1);
  l.gpu = j.value("gpu", -1);
  l.process = j.value("process", "");
}

void to_json(json& j, const GetMatrix& m) {
  j = {{"scope", m.scope},
       {"endpoints", m.endpoints},
       {"sizes", m.sizes},
       {"iterations", m.iterations},
       {"warmup", m.warmup},
       {"window", m.window},
       {"bandwidth_gbps", cube_json(m.bandwidth_gbps)},
       {"latency_us", cube_json(m.latency_us)}};
}

void from_json(const json& j, GetMatrix& m) {
  m = GetMatrix{};
  m.scope = j.value("scope", "rank");
  if (m.scope != "rank" && m.scope != "host") throw std::invalid_argument("matrix.scope: expected rank or host");
  m.endpoints = j.at("endpoints").get<std::vector<std::int32_t>>();
  m.sizes = j.at("sizes").get<std::vector<std::uint64_t>>();
  m.iterations = j.value("iterations", 0u);
  m.warmup = j.value("warmup", 0u);
  m.window = j.value("window", 0u);
  m.bandwidth_gbps = cube_from(j.at("bandwidth_gbps"), m.endpoints.size(), m.sizes.size(), "bandwidth_gbps");
  m.latency_us = cube_from(j.at("latency_us"), m.endpoints.size(), m.sizes.size(), "latency_us");
}

void to_json(json& j, const TopologyFile& f) {
  json ranks = json::array();
  for (const auto& r : f.ranks) {
    json e = r.labels;
    e["rank"] = r.rank;
    ranks.push_back(std::move(e));
  }
  json hosts = json::array();
  for (const auto& h : f.hosts) {
    json e = {{"host", h.host}, {"dc", h.dc}, {"rack", h.rack}, {"leader", h.leader}, {"ranks", h.ranks}};
    if (h.topology) e["topology"] = *h.topology;
    hosts.push_back(std::move(e));
  }
  j = {{"format", kFormat},    {"version", f.version},      {"created", f.created},
       {"command", f.command}, {"ranks", std::move(ranks)}, {"hosts", std::move(hosts)}};
  if (f.matrix) j["matrix"] = *f.matrix;
}

void from_json(const json& j, TopologyFile& f) {
  f = TopologyFile{};
  if (!j.is_object() || j.value("format", "") != kFormat) {
    throw std::invalid_argument(std::string("not a TensorHub topology file (no \"format\": \"") + kFormat + "\")");
  }
  f.version = j.at("version").get<int>();
  if (f.version > kTopologyFileVersion) {
    throw std::invalid_argument("written by a newer TensorHub (format version " + std::to_string(f.version) +
                                "; this build reads " + std::to_string(kTopologyFileVersion) + ")");
  }
  f.created = j.value("created", "");
  f.command = j.value("command", "");
  for (const auto& r : j.value("ranks", json::array())) {
    f.ranks.push_back({r.at("rank").get<std::int32_t>(), r.get<Labels>()});
  }
  for (const auto& h : j.value("hosts", json::array())) {
    HostEntry e;
    e.host = h.at("host").get<std::string>();
    e.dc = h.value("dc", "");
    e.rack = h.value("rack", "");
    e.leader = h.value("leader", -1);
    e.ranks = h.value("ranks", std::vector<std::int32_t>{});
    if (h.contains("topology")) e.topology = h.at("topology").get<NodeTopology>();
    f.hosts.push_back(std::move(e));
  }
  if (j.contains("matrix") && !j.at("matrix").is_null()) f.matrix = j.at("matrix").get<GetMatrix>();
}

const HostEntry* TopologyFile::find_host(std::string_view host) const {
  for (const auto& h : hosts) {
    if (h.host == host) return &h;
  }
  return nullptr;
}

TopologyFile load_topology_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw TopologyFileError("cannot read topology file", path, std::strerror(errno));
  std::stringstream text;
  text << in.rdbuf();
  json j;
  try {
    j = json::parse(text.str());
  } catch (const json::parse_error& e) {
    throw TopologyFileError("cannot load topology file", path, std::string("not JSON: ") + e.what());
  }
  try {
    return j.get<TopologyFile>();
  } catch (const TopologyFileError&) {
    throw;
  } catch (const std::exception& e) {
    throw TopologyFileError("cannot load topology file", path, e.what());
  }
}

void save_topology_file(const std::string& path, const TopologyFile& file) {
  const json j = file;
  std::ofstream out(path);
  if (!out) throw TopologyFileError("cannot write topology file", path, std::strerror(errno));
  out << j.dump(2) << "\n";
  out.flush();
  if (!out) throw TopologyFileError("cannot write topology file", path, "write failed");
}

}  // namespace tensorhub::topo
