// One simulated fan-out: a topology, T trainer GPUs publishing a model, R reader GPUs pulling
// it, by one method. Methods: tensorhub (plan-based pulls against the real in-process
// Coordinator, tensorhub_plan_method.cpp), tensorhub-chunk (the per-chunk acquire protocol
// against it, tensorhub_method.cpp),
// star, ring (NCCL-style pipelined ring broadcast), tree (pipelined binary tree), store
// (store-copy through k storage servers), ckpt (checkpoint-engine style: host copy, then a
// pipelined ring broadcast from host memory) (baselines.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tensorhub/sim/network.hpp"

namespace tensorhub::sim {

struct Scenario {
  TopologyConfig topo;
  std::uint32_t trainers = 1;  // GPUs 0..T-1 publish one shard each
  std::uint32_t readers = 1;   // the next GPUs (with 2 DCs: half in each, DC 1 from its first GPU)
  double model_bytes = 64.0 * (1 << 20);
  double chunk_bytes = 512.0 * 1024;
  std::uint32_t max_readers_per_source = 2;  // coordinator K
  std::uint32_t plan_fanout = 1;             // tensorhub: CoordinatorConfig::plan_fanout
  std::uint32_t plan_rails = 0;              // tensorhub: CoordinatorConfig::plan_rails (0: GPUs per host)
  std::uint32_t inflight = 8;                // tensorhub: reads in flight per reader (EngineOptions::inflight)
  std::uint32_t batch = 64;                  // tensorhub: chunk ids per acquire
  double rpc_s = 0;                          // tensorhub: control round trip (acquire, complete)
  // tensorhub: time a relay hop adds beyond its one-chunk lag: the follower's progress poll, its
  // reply and the chunk's read request each wait in a link queue full of bulk data (netsim: tc
  // tbf queues of up to 25 ms). Modelled as a longer lag: chunk + this x the NIC's rate.
  double hop_latency_s = 0;
  double pcie_gbps = 200;  // ckpt: GPU -> host copy rate per GPU
  // Elastic joins (scenario b, tensorhub only): the last `joiners` of the readers arrive late, in
  // waves of `join_wave` every `join_every_s` from `join_start_s` (spot instances); each
  // registers with the coordinator and pulls the version when it arrives.
  std::uint32_t joiners = 0;
  std::uint32_t join_wave = 1;
  double join_start_s = 0;
  double join_every_s = 0;
  // Resharding (tensorhub only; 0: every reader pulls the whole model): reader i is rank
  // i % reader_tp of a rollout TP group of reader_tp and pulls only its box. The trainers are a
  // TP group of `trainers` cut the same way (shard t is box t). reshard_dim 0 (column-parallel,
  // FSDP): rank k's box is the bytes [k S / P, (k + 1) S / P) in shard order, and it relays the
  // trainer shards its box holds whole. 1 (row-parallel): every chunk of each trainer shard whose
  // columns meet its own (a chunk holds rows, all their columns), and it relays nothing (the
  // product does not offer strided boxes). Baselines always move the whole model, as peers do
  // that gather full tensors on a trainer rank and broadcast them.
  std::uint32_t reader_tp = 0;
  std::uint32_t reshard_dim = 0;
};

// When joiner `j` (0-based) of `s` arrives.
double join_time_s(const Scenario& s, std::uint32_t j);

struct MethodResult {
  std::string method;
  std::string protocol = "-";  // tensorhub: "acquire" (per-chunk) or "plan"; baselines: "-"
  double last_s = 0, mean_s = 0, lower_bound_s = 0;
  std::vector<double> reader_s;
  double trainer_bytes = 0;  // sent by the trainer GPUs (NIC + NVLink)
  double spine_bytes = 0, wan_bytes = 0, storage_bytes = 0, nvlink_bytes = 0;
  std::uint64_t control_msgs = 0;  // coordinator calls by the readers (tensorhub)
  double coord_cpu_s = 0;          // thread CPU time inside the coordinator's calls
  std::uint64_t events = 0, pipes = 0;
  double wall_s = 0;
  // Elastic joins: per joiner, from its arrival to its last byte; bytes joiners read from the
  // trainers.
  std::vector<double> joiner_s;
  double joiner_trainer_bytes = 0;
};

// Node ids of the trainers and readers of `s` on `net`; throws UserError when they do not fit.
std::vector<std::uint32_t> trainer_nodes(const Scenario& s, const Network& net);
std::vector<std::uint32_t> reader_nodes(const Scenario& s, const Network& net);
// [begin, end) bytes of trainer t's shard (chunk-aligned, the last one shorter).
std::pair<double, double> shard_range(const Scenario& s, std::uint32_t t);
// The byte ranges of the model reader i pulls (disjoint, ascending): [0, S) without reader_tp.
std::vector<std::pair<double, double>> reader_ranges(const Scenario& s, std::uint32_t i);
double reader_bytes(const Scenario& s, std::uint32_t i);
// Whether reader i relays trainer t's shard: it pulls all of it, contiguous (Scenario::reader_tp).
bool relays_shard(const Scenario& s, std::uint32_t i, std::uint32_t t);
// UserError when reader_tp / reshard_dim are out of range.
void check_reshard(const Scenario& s);
// max(each reader's bytes / its NIC + NVLink, and / its host's NICs when no trainer is there;
// the bytes some reader pulls / all trainers' NICs; the bytes some reader in DC 1 pulls / WAN).
double lower_bound_s(const Scenario& s, const Network& net);

const std::vector<std::string>& method_names();
MethodResult run_method(const std::string& method, const Scenario& s);

// Fills the timing and link fields of `r` from per-reader done times and the network's links.
void summarize(const Scenario& s, const Network& net, const std::vector<double>& done, MethodResult& r);

MethodResult run_baseline(const std::string& method, const Scenario& s);
MethodResult run_tensorhub_plan(const Scenario& s);   // "tensorhub": plan-based pulls
MethodResult run_tensorhub_chunk(const Scenario& s);  // "tensorhub-chunk": per-chunk acquire

}  // namespace tensorhub::sim
