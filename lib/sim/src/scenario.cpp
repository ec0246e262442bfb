#include "tensorhub/sim/scenario.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>

#include "tensorhub/core/error.hpp"

namespace tensorhub::sim {

std::vector<std::uint32_t> trainer_nodes(const Scenario& s, const Network& net) {
  if (s.trainers == 0 || s.readers == 0) throw UserError("sim: trainers and readers must be positive");
  const std::uint32_t per_dc = net.gpus() / s.topo.dcs;
  if (s.trainers > per_dc) throw UserError("sim: " + std::to_string(s.trainers) + " trainers do not fit in DC 0");
  std::vector<std::uint32_t> v(s.trainers);
  std::iota(v.begin(), v.end(), 0u);
  return v;
}

std::vector<std::uint32_t> reader_nodes(const Scenario& s, const Network& net) {
  const std::uint32_t per_dc = net.gpus() / s.topo.dcs;
  std::vector<std::uint32_t> v;
  if (s.topo.dcs == 1) {
    if (s.trainers + s.readers > net.gpus())
      throw UserError("sim: " + std::to_string(s.trainers + s.readers) + " GPUs needed, the topology has " +
                      std::to_string(net.gpus()));
    for (std::uint32_t i = 0; i < s.readers; ++i) v.push_back(s.trainers + i);
    return v;
  }
  const std::uint32_t in0 = (s.readers + 1) / 2, in1 = s.readers - in0;
  if (s.trainers + in0 > per_dc || in1 > per_dc) throw UserError("sim: the readers do not fit in the two DCs");
  for (std::uint32_t i = 0; i < in0; ++i) v.push_back(s.trainers + i);
  for (std::uint32_t i = 0; i < in1; ++i) v.push_back(per_dc + i);
  return v;
}

std::pair<double, double> shard_range(const Scenario& s, std::uint32_t t) {
  const double chunks = std::ceil(s.model_bytes / s.chunk_bytes);
  const double per = std::ceil(chunks / s.trainers) * s.chunk_bytes;
  const double b = std::min(s.model_bytes, per * t);
  return {b, std::min(s.model_bytes, b + per)};
}

namespace {

// Bytes in the union of the ranges.
double union_bytes(std::vector<std::pair<double, double>> v) {
  std::sort(v.begin(), v.end());
  double sum = 0;
  double end = 0;
  for (const auto& [b, e] : v) {
    const double from = std::max(b, end);
    if (e > from) sum += e - from;
    end = std::max(end, e);
  }
  return sum;
}

}  // namespace

std::vector<std::pair<double, double>> reader_ranges(const Scenario& s, std::uint32_t i) {
  const double S = s.model_bytes;
  if (s.reader_tp == 0) return {{0.0, S}};
  const double P = s.reader_tp;
  const double k = i % s.reader_tp;
  if (s.reshard_dim == 0) return {{S * k / P, S * (k + 1) / P}};
  std::vector<std::pair<double, double>> out;
  const double T = s.trainers;
  for (std::uint32_t t = 0; t < s.trainers; ++t) {
    const auto [b, e] = shard_range(s, t);
    if (e <= b || !(t * P < (k + 1) * T && k * T < (t + 1) * P)) continue;  // columns do not meet
    if (!out.empty() && out.back().second == b) {
      out.back().second = e;
    } else {
      out.emplace_back(b, e);
    }
  }
  return out;
}

double reader_bytes(const Scenario& s, std::uint32_t i) {
  double sum = 0;
  for (const auto& [b, e] : reader_ranges(s, i)) sum += e - b;
  return sum;
}

bool relays_shard(const Scenario& s, std::uint32_t i, std::uint32_t t) {
  if (s.reader_tp == 0) return true;
  if (s.reshard_dim != 0) return false;
  const auto [b, e] = shard_range(s, t);
  const auto r = reader_ranges(s, i).front();
  return r.first <= b && e <= r.second;
}

void check_reshard(const Scenario& s) {
  if (s.reader_tp > 4096) throw UserError("sim: reader TP " + std::to_string(s.reader_tp) + " is above 4096");
  if (s.reshard_dim > 1) throw UserError("sim: the reshard dimension must be 0 or 1");
}

double lower_bound_s(const Scenario& s, const Network& net) {
  const auto& links = net.links();
  const auto readers = reader_nodes(s, net);
  // Every reader receives S through its NIC and NVLink; every byte entering a reader host with
  // no trainer crosses one of the host's NICs.
  double lb = 0;
  const std::uint32_t g = s.topo.gpus_per_host;
  for (std::uint32_t i = 0; i < readers.size(); ++i) {
    const Node& n = net.node(readers[i]);
    const double bytes = reader_bytes(s, i);
    lb = std::max(lb, bytes / (links[n.nic_down].capacity + (g > 1 ? links[n.nvl_down].capacity : 0.0)));
    if (n.host >= (s.trainers + g - 1) / g) lb = std::max(lb, bytes / (links[n.nic_down].capacity * g));
  }
  double up = 0;
  for (auto t : trainer_nodes(s, net)) up += links[net.node(t).nic_up].capacity;
  // What some reader pulls leaves the trainers once; what some reader in DC 1 pulls crosses the WAN.
  std::vector<std::pair<double, double>> wanted, remote;
  for (std::uint32_t i = 0; i < readers.size(); ++i) {
    auto r = reader_ranges(s, i);
    wanted.insert(wanted.end(), r.begin(), r.end());
    if (net.node(readers[i]).dc != 0) remote.insert(remote.end(), r.begin(), r.end());
  }
  lb = std::max(lb, union_bytes(std::move(wanted)) / up);
  if (!remote.empty()) lb = std::max(lb, union_bytes(std::move(remote)) / (s.topo.wan_gbps * 1e9 / 8 * s.topo.goodput));
  return lb;
}

const std::vector<std::string>& method_names() {
  static const std::vector<std::string> names{"tensorhub", "tensorhub-chunk", "star", "ring", "tree", "store", "ckpt"};
  return names;
}

double join_time_s(const Scenario& s, std::uint32_t j) {
  return s.join_start_s + s.join_every_s * static_cast<double>(j / std::max<std::uint32_t>(s.join_wave, 1));
}

MethodResult run_method(const std::string& method, const Scenario& s) {
  if (s.joiners > 0 && method != "tensorhub") {
    throw UserError("sim: elastic joins (joiners) are simulated for the tensorhub method only, not '" + method + "'");
  }
  if (s.joiners > s.readers) throw UserError("sim: more joiners than readers");
  check_reshard(s);
  if (s.reader_tp > 0 && method == "tensorhub-chunk") {
    throw UserError("sim: resharding (reader TP) is simulated for the tensorhub method and the baselines, not '" +
                    method + "'");
  }
  const auto t0 = std::chrono::steady_clock::now();
  MethodResult r = method == "tensorhub"         ? run_tensorhub_plan(s)
                   : method == "tensorhub-chunk" ? run_tensorhub_chunk(s)
                                                 : run_baseline(method, s);
  r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

void summarize(const Scenario& s, const Network& net, const std::vector<double>& done, MethodResult& r) {
  r.reader_s = done;
  r.last_s = done.empty() ? 0 : *std::max_element(done.begin(), done.end());
  r.mean_s = done.empty() ? 0 : std::accumulate(done.begin(), done.end(), 0.0) / static_cast<double>(done.size());
  r.lower_bound_s = lower_bound_s(s, net);
  const auto& links = net.links();
  for (auto t : trainer_nodes(s, net)) {
    r.trainer_bytes += links[net.node(t).nic_up].bytes + links[net.node(t).nvl_up].bytes;
  }
  for (const auto& l : links) {
    if (l.cls == LinkClass::kSpine) r.spine_bytes += l.bytes;
    if (l.cls == LinkClass::kWan) r.wan_bytes += l.bytes;
    if (l.cls == LinkClass::kNvlink) r.nvlink_bytes += l.bytes;
  }
  for (std::uint32_t i = 0; i < s.topo.storage; ++i)
    r.storage_bytes += links[net.node(net.storage_node(i)).nic_up].bytes;
  // Spine links come in pairs (up at the source rack, down at the destination): count a byte once.
  r.spine_bytes /= 2;
}

}  // namespace tensorhub::sim
