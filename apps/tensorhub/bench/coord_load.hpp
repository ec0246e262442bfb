// The load behind `tensorhub bench coordinator`: R reader clients (threads) and one publisher
// against one coordinator, no data moved. Each reader pulls one version of `chunks` chunks the
// way the pull engine would, either chunk by chunk (acquire + complete, the old protocol, capped
// in time) or by plan (resolve, offer_relay, plan, a few held-range completes, finish). Depends
// only on lib/coord (and its gRPC client and server), so tests can run it too.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace tensorhub::cli::bench {

enum class LoadMode : std::uint8_t { kAcquire, kPlan };

struct LoadConfig {
  LoadMode mode = LoadMode::kPlan;
  bool grpc = false;  // over a GrpcServer on 127.0.0.1 (in this process) instead of in-process
  std::uint32_t readers = 64;
  std::uint32_t chunks = 25600;  // of the version (4 MiB each, nominally)
  std::uint32_t tensors = 64;
  std::uint32_t k = 2;                     // max_readers_per_source (serve --max-readers)
  std::uint32_t fanout = 1;                // plan_fanout (serve --plan-fanout)
  std::uint32_t batch = 64;                // acquire: chunks asked per call
  std::uint32_t waves = 4;                 // plan: held-range completes per reader
  std::chrono::milliseconds budget{2000};  // acquire: each reader stops after this long
};

struct LoadResult {
  std::uint64_t calls = 0;          // control calls of the pulls (not registration)
  std::uint64_t chunks_done = 0;    // chunks the readers got sources for and completed
  std::uint64_t chunks_wanted = 0;  // readers x chunks
  double wall_s = 0;                // of the pulls
  double coord_cpu_s = 0;           // coordinator CPU spent on them (see coord_load.cpp)
  double p50_us = 0;
  double p99_us = 0;
  bool complete = false;  // every reader got every chunk (else extrapolated)

  double scale() const { return chunks_done == 0 ? 0 : static_cast<double>(chunks_wanted) / chunks_done; }
  // Per version: measured when complete, else scaled up by chunks wanted / chunks done.
  double cpu_per_version_s() const { return coord_cpu_s * (complete ? 1.0 : scale()); }
  double calls_per_reader(std::uint32_t readers) const {
    return readers == 0 ? 0 : calls * (complete ? 1.0 : scale()) / readers;
  }
  double rpc_per_s() const { return wall_s > 0 ? calls / wall_s : 0; }
};

LoadResult run_load(const LoadConfig& config);
std::string to_string(LoadMode mode);

}  // namespace tensorhub::cli::bench
