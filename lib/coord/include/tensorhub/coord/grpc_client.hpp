// Client over gRPC: how a worker talks to a coordinator in another process
// (`tensorhub serve`, or the GrpcServer of another rank).
//
// Every call carries a deadline so no worker can hang on a dead coordinator: plain calls get
// `rpc_deadline`; wait_drained and wait_for get their `timeout` plus `rpc_deadline`, so a wait
// that times out on the coordinator still gets its answer back. gRPC status codes come back as
// the typed exceptions of tensorhub/core/error.hpp:
//   FAILED_PRECONDITION + OffloadRequired detail -> OffloadRequired (a UserError)
//   INVALID_ARGUMENT, FAILED_PRECONDITION -> UserError
//   NOT_FOUND + UnknownWorker detail      -> UnknownWorker (register again)
//   NOT_FOUND                             -> NotFoundError
//   DEADLINE_EXCEEDED                     -> TimeoutError
//   INTERNAL                              -> ContractViolation
//   UNAUTHENTICATED, PERMISSION_DENIED    -> UserError
//   anything else (UNAVAILABLE, ...)      -> TransportError
// with the message "coordinator <address>: <rpc>: <status message>".
//
// Calls fail fast: an unreachable single coordinator gives TransportError after about one second
// of retries rather than waiting for the whole deadline. The channel reconnects by itself; a GrpcClient stays usable
// after errors. Thread-safe: any number of threads may call concurrently (one channel, many streams). gRPC and
// generated code stay out of this header (pimpl) so users need neither.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "tensorhub/coord/auth.hpp"
#include "tensorhub/coord/client.hpp"

namespace tensorhub::coord {

class GrpcClient final : public Client {
 public:
  // `address` is a gRPC target, e.g. "host:port" or "dns:///host:port", or a comma-separated
  // list of them: a primary coordinator and its standbys (`tensorhub serve --standby-of`).
  // Calls go to one address; when it answers UNAVAILABLE (down, or a standby that has not
  // taken over) the client moves to the next, round and round within the call's deadline.
  // Every call carries `auth.token` ("authorization: Bearer ...") and the session secrets of the
  // workers registered through this client (README "Security model"); UNAUTHENTICATED and
  // PERMISSION_DENIED come back as UserError. TLS when `auth.tls_ca_file` is set. Messages up to
  // 256 MiB both ways. Connecting is lazy: this never fails for a down server.
  GrpcClient(std::string address, std::chrono::milliseconds rpc_deadline,
             ClientAuth auth = ClientAuth::from_environment());
  ~GrpcClient() override;

  GrpcClient(const GrpcClient&) = delete;
  GrpcClient& operator=(const GrpcClient&) = delete;

  const std::string& address() const;

  WorkerId register_worker(const WorkerInfo& info) override;
  void deregister_worker(WorkerId worker) override;
  HeartbeatReply heartbeat(WorkerId worker) override;

  PublishReply publish(const PublishRequest& request) override;
  std::uint32_t unpublish(WorkerId worker, const std::string& model, std::uint64_t version) override;
  std::uint32_t wait_drained(WorkerId worker, const std::string& model, std::uint64_t version,
                             std::chrono::milliseconds timeout) override;

  void retain(const std::string& model, std::uint64_t version) override;
  void release(const std::string& model, std::uint64_t version) override;

  std::optional<std::uint64_t> latest(const std::string& model) override;
  std::optional<std::uint64_t> wait_for(const std::string& model, std::optional<std::uint64_t> newer_than,
                                        std::chrono::milliseconds timeout) override;

  ResolveReply resolve(const ResolveRequest& request) override;
  void offer_relay(const RelayOffer& offer) override;
  AcquireReply acquire(const AcquireRequest& request) override;
  // An older server answers UNIMPLEMENTED: PlanUnsupported.
  PlanReply plan(const PlanRequest& request) override;
  void complete(const CompleteRequest& request) override;
  void finish(const FinishRequest& request) override;

  std::vector<ModelStatus> status() override;
  std::vector<WorkerStatus> workers() override;
  void attach_snapshot(const std::string& path, const Manifest& manifest) override;
  OffloadLease begin_offload(WorkerId worker, const std::string& model, std::uint64_t version) override;
  void end_offload(WorkerId worker, const std::string& model, std::uint64_t version) override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tensorhub::coord
