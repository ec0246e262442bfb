#include "coord_run.hpp"

#include <time.h>

#include <algorithm>
#include <chrono>

#include "tensorhub/core/error.hpp"

namespace tensorhub::sim {

double thread_cpu_s() {
  timespec ts{};
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
    throw ContractViolation("clock_gettime(CLOCK_THREAD_CPUTIME_ID) failed");
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

CoordRun::CoordRun(const Scenario& s)
    : s_(s),
      net_(s.topo),
      fluid_(net_, s.chunk_bytes + s.hop_latency_s * s.topo.nic_gbps * 1e9 / 8 * s.topo.goodput),
      coord_(config()),
      trainers_(trainer_nodes(s, net_)),
      readers_(reader_nodes(s, net_)) {}

coord::CoordinatorConfig CoordRun::config() {
  coord::CoordinatorConfig c;
  c.max_readers_per_source = s_.max_readers_per_source;
  c.plan_fanout = s_.plan_fanout;
  c.plan_rails = s_.plan_rails == 0 ? std::max<std::uint32_t>(s_.topo.gpus_per_host, 1) : s_.plan_rails;
  c.lease = std::chrono::milliseconds(0);
  c.incarnation = 1;
  c.clock = [this] {
    return std::chrono::steady_clock::time_point{} +
           std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(fluid_.now()));
  };
  return c;
}

coord::WorkerId CoordRun::add_worker(std::uint32_t node) {
  coord::WorkerInfo w;
  w.endpoint = "sim:" + std::to_string(node);
  w.transport = "local";
  w.host = net_.host_label(node);
  w.rack = net_.rack_label(node);
  w.dc = net_.dc_label(node);
  w.gpu = static_cast<std::int32_t>(net_.node(node).gpu);
  const auto id = coord_.register_worker(w);
  node_of_[id] = node;
  return id;
}

void CoordRun::publish() {
  const auto chunk = static_cast<std::uint64_t>(s_.chunk_bytes);
  for (std::uint32_t t = 0; t < trainers_.size(); ++t) {
    const auto [b, e] = shard_range(s_, t);
    const auto id = add_worker(trainers_[t]);
    coord::PublishRequest p;
    p.worker = id;
    p.model = "policy";
    p.version = 1;
    p.chunk_bytes = chunk;
    p.group = coord::Group{"trainer", static_cast<std::uint32_t>(trainers_.size()), t};
    p.shard.shard = t;
    const auto bytes = static_cast<std::uint64_t>(e - b);
    if (bytes > 0) {
      p.shard.tensors.push_back(TensorSpec{"w" + std::to_string(t), DType::kU8, {static_cast<std::int64_t>(bytes)}});
      p.shard.checksums.emplace_back(chunk_count(bytes, chunk), 1);
      p.regions.push_back("sim");
      fluid_.hold(trainers_[t], b, e);
    }
    coord_.publish(p);
  }
}

std::uint64_t CoordRun::resolve(std::uint32_t i, coord::WorkerId id) {
  const auto reply = call([&] {
    return coord_.resolve(coord::ResolveRequest{id, "policy", std::nullopt, {"r" + std::to_string(i), 1, 0}, 0});
  });
  if (manifest_.chunks.empty()) {
    manifest_ = *reply.manifest;
    base_.resize(manifest_.tensors.size());
    for (std::size_t k = 0; k < manifest_.tensors.size(); ++k)
      base_[k] = shard_range(s_, manifest_.tensors[k].shard).first;
  }
  return reply.seq;
}

std::pair<double, double> CoordRun::bytes_of(std::uint32_t first, std::uint32_t count) const {
  const auto& a = manifest_.chunks.at(first);
  const auto& z = manifest_.chunks.at(first + count - 1);
  return {base_[a.tensor] + static_cast<double>(a.offset),
          base_[z.tensor] + static_cast<double>(z.offset) + static_cast<double>(z.length)};
}

void CoordRun::finish(std::uint32_t i, coord::WorkerId id, std::uint64_t seq) {
  call([&] {
    coord_.finish(coord::FinishRequest{id, "policy", 1, {"r" + std::to_string(i), 1, 0}, seq});
    return 0;
  });
}

void CoordRun::fill(MethodResult& r, const std::vector<double>& done) const {
  summarize(s_, net_, done, r);
  r.control_msgs = msgs_;
  r.coord_cpu_s = cpu_s_;
  r.events = fluid_.events();
  r.pipes = fluid_.pipes();
}

}  // namespace tensorhub::sim
