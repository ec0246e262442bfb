// Prometheus metrics of a coordinator (README "Observability"):
//   CallMetrics    thread-safe counters and latency histograms of every Client call, plus what
//                  the calls show of the data plane (chunks and bytes assigned to and read from
//                  publishers and relays, reads that failed and were re-planned, "wait" answers).
//   MeteredClient  a Client that forwards to another (the Coordinator) and records into a
//                  CallMetrics; GrpcServer serves it instead of the coordinator itself, so no
//                  server code knows about metrics.
//   render_metrics the text exposition format (version 0.0.4) of the call metrics and of the
//                  coordinator's status() and workers(): versions and their state, holders,
//                  pins, retention, workers by state.
// Bounded memory: per-version facts are kept for the kMaxVersions most recent (model, version)s.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "tensorhub/coord/client.hpp"

namespace tensorhub::coord {

class CallMetrics {
 public:
  // Upper bounds (seconds) of the latency histogram buckets; +Inf is implied.
  static constexpr std::array<double, 14> kBuckets{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
                                                   0.025,  0.05,    0.1,    0.25,  0.5,    1,     5};
  static constexpr std::size_t kMaxVersions = 64;

  // One call of `method` that took `seconds`; `error` if it threw.
  void record(const std::string& method, double seconds, bool error);
  // What a resolve returned: the chunk sizes of (model, version), for the byte counters.
  void manifest_seen(const Manifest& m);
  // An acquire's answer: assignments by holder kind, chunks told to wait, chunks unavailable.
  void acquired(const AcquireRequest& req, const AcquireReply& reply);
  // A complete: reads done (ok) or failed (re-planned), bytes by the holder's kind.
  void completed(const CompleteRequest& req);
  // A plan's answer: plan-based reads succeed without a report, so their chunks and bytes count
  // by the planned source's kind when planned (a chunk planned again after a failure counts again).
  void planned(const PlanRequest& req, const PlanReply& reply);

  // The call and data-plane metrics in text exposition format.
  std::string render() const;

 private:
  struct Call {
    std::uint64_t count = 0;
    std::uint64_t errors = 0;
    double sum = 0;
    std::array<std::uint64_t, kBuckets.size()> buckets{};  // non-cumulative
  };
  using Key = std::tuple<std::string, std::uint64_t>;  // (model, version)
  struct VersionFacts {
    std::vector<std::uint64_t> chunk_bytes;
    std::map<WorkerId, bool> origin;  // holder -> publisher?, from the assignments
  };
  VersionFacts& facts(const std::string& model, std::uint64_t version);

  mutable std::mutex mu_;
  std::map<std::string, Call> calls_;
  std::map<Key, VersionFacts> versions_;
  std::deque<Key> order_;               // oldest first
  std::uint64_t assigned_[2] = {0, 0};  // [relay, publisher]
  std::uint64_t read_chunks_[2] = {0, 0};
  std::uint64_t read_bytes_[2] = {0, 0};
  std::uint64_t failed_reads_ = 0;
  std::uint64_t wait_answers_ = 0;
  std::uint64_t unavailable_ = 0;
};

class MeteredClient final : public Client {
 public:
  MeteredClient(Client& inner, CallMetrics& metrics) : inner_(inner), m_(metrics) {}

  WorkerId register_worker(const WorkerInfo& info) override;
  void deregister_worker(WorkerId worker) override;
  HeartbeatReply heartbeat(WorkerId worker) override;
  PublishReply publish(const PublishRequest& request) override;
  std::uint32_t unpublish(WorkerId worker, const std::string& model, std::uint64_t version) override;
  std::uint32_t wait_drained(WorkerId worker, const std::string& model, std::uint64_t version,
                             std::chrono::milliseconds timeout) override;
  void retain(const std::string& model, std::uint64_t version) override;
  void release(const std::string& model, std::uint64_t version) override;
  void attach_snapshot(const std::string& path, const Manifest& manifest) override;
  OffloadLease begin_offload(WorkerId worker, const std::string& model, std::uint64_t version) override;
  void end_offload(WorkerId worker, const std::string& model, std::uint64_t version) override;
  std::optional<std::uint64_t> latest(const std::string& model) override;
  std::optional<std::uint64_t> wait_for(const std::string& model, std::optional<std::uint64_t> newer_than,
                                        std::chrono::milliseconds timeout) override;
  ResolveReply resolve(const ResolveRequest& request) override;
  void offer_relay(const RelayOffer& offer) override;
  AcquireReply acquire(const AcquireRequest& request) override;
  PlanReply plan(const PlanRequest& request) override;  // counted as "Plan"
  void complete(const CompleteRequest& request) override;
  void finish(const FinishRequest& request) override;
  std::vector<ModelStatus> status() override;
  std::vector<WorkerStatus> workers() override;

 private:
  template <class F>
  auto timed(const char* method, F&& f) -> decltype(f());

  Client& inner_;
  CallMetrics& m_;
};

// The whole exposition: `calls` (may be null) and the state seen through `coordinator`
// (status() and workers(), called directly: not counted as RPCs).
std::string render_metrics(Client& coordinator, const CallMetrics* calls);

}  // namespace tensorhub::coord
