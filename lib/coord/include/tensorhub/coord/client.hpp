// What a worker can ask the coordinator. Implemented in-process by Coordinator and over gRPC by
// GrpcClient. Every call is bounded in time: plain calls by the client's RPC deadline, the two
// waiting calls by their `timeout` argument.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tensorhub/coord/types.hpp"
#include "tensorhub/core/error.hpp"

namespace tensorhub::coord {

// The coordinator does not offer plan-based pulls (an older server): acquire instead.
class PlanUnsupported : public Error {
 public:
  using Error::Error;
};

class Client {
 public:
  virtual ~Client() = default;

  virtual WorkerId register_worker(const WorkerInfo& info) = 0;
  virtual void deregister_worker(WorkerId worker) = 0;
  // Keeps `worker`'s lease (every other call from it does too). Throws UnknownWorker if the
  // coordinator does not know it (declared dead, or a new coordinator): register again and
  // re-publish. heartbeat(0) is a liveness probe of the coordinator itself (no worker).
  virtual HeartbeatReply heartbeat(WorkerId worker) = 0;

  virtual PublishReply publish(const PublishRequest& request) = 0;
  // Withdraws the worker's reference to (model, version): no new reads are assigned to it.
  // Returns the number of reads still pinning it. Throws OffloadRequired (and changes nothing)
  // when the version is retained, has no snapshot, and this worker is the last live holder of
  // some of its chunks: offload it first (begin_offload / attach_snapshot) or release it.
  virtual std::uint32_t unpublish(WorkerId worker, const std::string& model, std::uint64_t version) = 0;
  // Waits until the withdrawn reference has no pinned reads (then forgets it) or `timeout`
  // passes; returns the pins left (0 = drained).
  virtual std::uint32_t wait_drained(WorkerId worker, const std::string& model, std::uint64_t version,
                                     std::chrono::milliseconds timeout) = 0;

  virtual void retain(const std::string& model, std::uint64_t version) = 0;
  virtual void release(const std::string& model, std::uint64_t version) = 0;

  // Registers a file reference: the snapshot at `path` holds (manifest.model, manifest.version).
  // An existing version must be committed and the manifest's tensors (name, dtype, shape) and
  // per-chunk checksums must equal the version's (the shard layout may differ), else UserError
  // naming the first difference. An unknown version is created committed, with no holder,
  // backed by the file and retained once (cold start: recover after a coordinator restart or a
  // drop; release() it to let it go). A version with a snapshot is readable without any live
  // holder (readers read the file) and is not dropped while retained.
  virtual void attach_snapshot(const std::string& path, const Manifest& manifest) = 0;
  // Offload lease (design: coordinator.hpp). Asked after unpublish threw OffloadRequired.
  virtual OffloadLease begin_offload(WorkerId worker, const std::string& model, std::uint64_t version) = 0;
  // Gives up the lease without attaching (the write failed), so another holder may take it.
  virtual void end_offload(WorkerId worker, const std::string& model, std::uint64_t version) = 0;

  virtual std::optional<std::uint64_t> latest(const std::string& model) = 0;
  virtual std::optional<std::uint64_t> wait_for(const std::string& model, std::optional<std::uint64_t> newer_than,
                                                std::chrono::milliseconds timeout) = 0;

  virtual ResolveReply resolve(const ResolveRequest& request) = 0;
  virtual void offer_relay(const RelayOffer& offer) = 0;
  virtual AcquireReply acquire(const AcquireRequest& request) = 0;
  // A plan for the chunks a reader still needs (types.hpp, PlanRequest). Throws PlanUnsupported
  // when this coordinator (or the one behind a client) does not plan: the reader then acquires
  // chunk by chunk.
  virtual PlanReply plan(const PlanRequest& request) {
    (void)request;
    throw PlanUnsupported("this coordinator does not offer plan-based pulls");
  }
  virtual void complete(const CompleteRequest& request) = 0;
  virtual void finish(const FinishRequest& request) = 0;

  virtual std::vector<ModelStatus> status() = 0;
  // Registered workers with their liveness, then those that died or left recently.
  virtual std::vector<WorkerStatus> workers() = 0;
};

}  // namespace tensorhub::coord
