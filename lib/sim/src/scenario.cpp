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

double lower_bound_s(const Scenario& s, const Network& net) {
  const auto& links = net.links();
  const auto readers = reader_nodes(s, net);
  // Every reader receives S through its NIC and NVLink; every byte entering a reader host with
  // no trainer crosses one of the host's NICs.
  double lb = 0;
  const std::uint32_t g = s.topo.gpus_per_host;
  for (auto r : readers) {
    const Node& n = net.node(r);
    lb = std::max(lb, s.model_bytes / (links[n.nic_down].capacity + (g > 1 ? links[n.nvl_down].capacity : 0.0)));
    if (n.host >= (s.trainers + g - 1) / g) lb = std::max(lb, s.model_bytes / (links[n.nic_down].capacity * g));
  }
  double up = 0;
  for (auto t : trainer_nodes(s, net)) up += links[net.node(t).nic_up].capacity;
  lb = std::max(lb, s.model_bytes / up);
  const bool remote = std::any_of(readers.begin(), readers.end(), [&](auto r) { return net.node(r).dc != 0; });
  if (remote) lb = std::max(lb, s.model_bytes / (s.topo.wan_gbps * 1e9 / 8 * s.topo.goodput));
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
