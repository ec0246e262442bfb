// The baselines, in the same engine as TensorHub. Every trainer t publishes its shard; for a
// shard, the readers are taken in an order rotated by t so that T shards spread their first hops
// over T different readers (as NCCL's channels do).
#include <algorithm>
#include <memory>

#include "tensorhub/core/error.hpp"
#include "tensorhub/sim/fluid.hpp"
#include "tensorhub/sim/scenario.hpp"

namespace tensorhub::sim {
namespace {

struct Rig {
  Network net;
  Fluid fluid;
  std::vector<std::uint32_t> trainers, readers;
  std::vector<double> done;
  std::vector<std::uint32_t> left;  // reads left per reader

  explicit Rig(const Scenario& s)
      : net(s.topo),
        fluid(net, s.chunk_bytes),
        trainers(trainer_nodes(s, net)),
        readers(reader_nodes(s, net)),
        done(readers.size(), 0),
        left(readers.size(), 0) {
    for (std::uint32_t t = 0; t < trainers.size(); ++t) {
      const auto [b, e] = shard_range(s, t);
      if (e > b) fluid.hold(trainers[t], b, e);
    }
  }
  // A read into reader index i (not a storage server).
  void read_into(std::uint32_t src, std::uint32_t i, double b, double e) {
    ++left[i];
    fluid.read(src, readers[i], b, e, [this, i] {
      if (--left[i] == 0) done[i] = fluid.now();
    });
  }
  // The k-th reader of shard t's order. With whole hosts of readers (g GPUs each) the order
  // visits hosts one after the other, starting at GPU t mod g of each host: the hop between two
  // hosts then leaves and enters on rail t mod g, so T shards use every NIC of a host (as NCCL's
  // channels do over rails) instead of all crossing at the same pair of GPUs.
  std::uint32_t rotated(const Scenario& s, std::uint32_t t, std::uint32_t k) const {
    const auto n = static_cast<std::uint32_t>(readers.size());
    const std::uint32_t g = s.topo.gpus_per_host;
    if (g > 1 && n % g == 0 && readers.front() % g == 0) {
      const std::uint32_t hosts = n / g;
      const std::uint32_t host =
          (k / g + static_cast<std::uint32_t>(static_cast<std::uint64_t>(t) * hosts / s.trainers)) % hosts;
      return host * g + (k % g + t) % g;
    }
    return (k + static_cast<std::uint32_t>(static_cast<std::uint64_t>(t) * n / s.trainers)) % n;
  }
};

// parent(k): index (in the rotated order) of the node k reads from, -1 = the trainer.
template <typename Parent>
void broadcast(Rig& rig, const Scenario& s, Parent parent) {
  for (std::uint32_t t = 0; t < rig.trainers.size(); ++t) {
    const auto [b, e] = shard_range(s, t);
    if (!(e > b)) continue;
    for (std::uint32_t k = 0; k < rig.readers.size(); ++k) {
      const long p = parent(k);
      const std::uint32_t src = p < 0 ? rig.trainers[t] : rig.readers[rig.rotated(s, t, static_cast<std::uint32_t>(p))];
      rig.read_into(src, rig.rotated(s, t, k), b, e);
    }
  }
}

void ring(Rig& rig, const Scenario& s) {
  broadcast(rig, s, [](std::uint32_t k) { return static_cast<long>(k) - 1; });
}

void start_store_reads(Rig& rig, const Scenario& s) {
  const std::uint32_t k = s.topo.storage;
  for (std::uint32_t i = 0; i < rig.readers.size(); ++i) {
    for (std::uint32_t j = 0; j < k; ++j) {
      const double b = s.model_bytes * j / k, e = s.model_bytes * (j + 1) / k;
      rig.read_into(rig.net.storage_node(j), i, b, e);
    }
  }
}

// Store-copy: the trainers write the model to k storage servers (server j gets the j-th k-th),
// then every reader reads every part. Not pipelined: a reader starts after the upload.
void store(Rig& rig, const Scenario& s) {
  const std::uint32_t k = s.topo.storage;
  if (k == 0) throw UserError("sim: the store method needs --storage k >= 1");
  auto uploads = std::make_shared<std::uint32_t>(0);
  for (std::uint32_t j = 0; j < k; ++j) {
    const double b = s.model_bytes * j / k, e = s.model_bytes * (j + 1) / k;
    for (std::uint32_t t = 0; t < rig.trainers.size(); ++t) {
      const auto [sb, se] = shard_range(s, t);
      const double lo = std::max(b, sb), hi = std::min(e, se);
      if (!(hi > lo)) continue;
      ++*uploads;
      rig.fluid.read(rig.trainers[t], rig.net.storage_node(j), lo, hi, [&rig, &s, uploads] {
        if (--*uploads == 0) start_store_reads(rig, s);
      });
    }
  }
}

}  // namespace

MethodResult run_baseline(const std::string& method, const Scenario& s) {
  Rig rig(s);
  MethodResult r;
  r.method = method;
  if (method == "star") {
    broadcast(rig, s, [](std::uint32_t) { return -1L; });
  } else if (method == "ring") {
    ring(rig, s);
  } else if (method == "tree") {
    broadcast(rig, s, [](std::uint32_t k) { return k == 0 ? -1L : static_cast<long>((k - 1) / 2); });
  } else if (method == "store") {
    store(rig, s);
  } else if (method == "ckpt") {
    // Each trainer copies its shard to host memory (PCIe), then a pipelined ring from there.
    const auto [b, e] = shard_range(s, 0);
    rig.fluid.at((e - b) / (s.pcie_gbps * 1e9 / 8), [&rig, &s] { ring(rig, s); });
  } else {
    throw UserError("sim: unknown method '" + method + "'");
  }
  rig.fluid.run();
  summarize(s, rig.net, rig.done, r);
  r.events = rig.fluid.events();
  r.pipes = rig.fluid.pipes();
  return r;
}

}  // namespace tensorhub::sim
