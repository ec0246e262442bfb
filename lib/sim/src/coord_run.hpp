// What both TensorHub methods of the simulator share (private header): the real in-process
// Coordinator on the simulator's virtual clock (leases off), the trainer group's publish (one
// shard per trainer GPU, held from the start), workers registered with the topology's labels,
// every coordinator call counted and timed (thread CPU time), and the manifest's byte layout.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tensorhub/coord/coordinator.hpp"
#include "tensorhub/sim/fluid.hpp"
#include "tensorhub/sim/scenario.hpp"

namespace tensorhub::sim {

double thread_cpu_s();

class CoordRun {
 public:
  explicit CoordRun(const Scenario& s);
  CoordRun(const CoordRun&) = delete;
  CoordRun& operator=(const CoordRun&) = delete;

 protected:
  // Counts and times one coordinator call.
  template <typename F>
  auto call(F&& f) {
    ++msgs_;
    struct Add {
      double& sum;
      double t0;
      ~Add() { sum += thread_cpu_s() - t0; }
    } add{cpu_s_, thread_cpu_s()};
    return f();
  }

  coord::WorkerId add_worker(std::uint32_t node);
  // Every trainer publishes its shard of version 1 and holds it (Fluid::hold).
  void publish();
  // Resolves for reader `i` (worker `id`); returns the pull's seq. The first call keeps the
  // manifest and each tensor's offset in the model's byte space.
  std::uint64_t resolve(std::uint32_t i, coord::WorkerId id);
  // [begin, end) bytes of chunks [first, first + count) in the model's byte space (contiguous:
  // shards are consecutive byte ranges and a shard's chunks are consecutive in the manifest).
  std::pair<double, double> bytes_of(std::uint32_t first, std::uint32_t count) const;
  // Ends reader `i`'s pull (FinishRequest).
  void finish(std::uint32_t i, coord::WorkerId id, std::uint64_t seq);
  // Fills the result's common fields.
  void fill(MethodResult& r, const std::vector<double>& done) const;

  const Scenario& s_;
  Network net_;
  Fluid fluid_;
  coord::Coordinator coord_;
  std::vector<std::uint32_t> trainers_, readers_;
  std::unordered_map<coord::WorkerId, std::uint32_t> node_of_;
  Manifest manifest_;
  std::vector<double> base_;  // per manifest tensor: its first byte in the model's byte space
  std::uint64_t msgs_ = 0;
  double cpu_s_ = 0;

 private:
  coord::CoordinatorConfig config();
};

}  // namespace tensorhub::sim
