// A coord::Client that forwards every call to another and records it in a TraceRecorder
// (private header): one span per control call on the calling thread's lane (heartbeats on
// their own), named after the call, with the model and version where the call has them;
// wait_for and wait_drained are category "wait", the rest "control". A call that throws is
// recorded with "error" set.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "tensorhub/coord/client.hpp"
#include "tensorhub/core/trace.hpp"

namespace tensorhub {

class TracingClient final : public coord::Client {
 public:
  TracingClient(coord::Client& inner, TraceRecorder& trace) : inner_(inner), trace_(trace) {}

  coord::WorkerId register_worker(const coord::WorkerInfo& i) override;
  void deregister_worker(coord::WorkerId w) override;
  coord::HeartbeatReply heartbeat(coord::WorkerId w) override;
  coord::PublishReply publish(const coord::PublishRequest& r) override;
  std::uint32_t unpublish(coord::WorkerId w, const std::string& m, std::uint64_t v) override;
  std::uint32_t wait_drained(coord::WorkerId w, const std::string& m, std::uint64_t v,
                             std::chrono::milliseconds t) override;
  void retain(const std::string& m, std::uint64_t v) override;
  void release(const std::string& m, std::uint64_t v) override;
  void attach_snapshot(const std::string& p, const Manifest& m) override;
  coord::OffloadLease begin_offload(coord::WorkerId w, const std::string& m, std::uint64_t v) override;
  void end_offload(coord::WorkerId w, const std::string& m, std::uint64_t v) override;
  std::optional<std::uint64_t> latest(const std::string& m) override;
  std::optional<std::uint64_t> wait_for(const std::string& m, std::optional<std::uint64_t> n,
                                        std::chrono::milliseconds t) override;
  coord::ResolveReply resolve(const coord::ResolveRequest& r) override;
  void offer_relay(const coord::RelayOffer& o) override;
  coord::AcquireReply acquire(const coord::AcquireRequest& r) override;
  coord::PlanReply plan(const coord::PlanRequest& r) override;
  void complete(const coord::CompleteRequest& r) override;
  void finish(const coord::FinishRequest& r) override;
  std::vector<coord::ModelStatus> status() override;
  std::vector<coord::WorkerStatus> workers() override;

 private:
  // Runs `f`, recording a span `name` with `args` (and "error" if it throws).
  template <class F>
  auto traced(const char* name, const char* cat, std::vector<TraceArg> args, F&& f) -> decltype(f());

  coord::Client& inner_;
  TraceRecorder& trace_;
};

}  // namespace tensorhub
