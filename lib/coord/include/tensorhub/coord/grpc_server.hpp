// Serves a Client implementation (in practice the Coordinator) over gRPC, so that workers in
// other processes reach it through GrpcClient.
//
// RAII: the constructor binds and starts serving, the destructor stops. Each rpc is forwarded
// to `backend` on a server thread, so the backend must be thread-safe and must outlive the
// server. Exceptions thrown by the backend become gRPC status codes (GrpcClient maps them back):
//   UnknownWorker -> NOT_FOUND, error_details "tensorhub.UnknownWorker"
//   NotFoundError -> NOT_FOUND          UserError      -> INVALID_ARGUMENT
//   TimeoutError  -> DEADLINE_EXCEEDED  TransportError -> UNAVAILABLE
//   OffloadRequired -> FAILED_PRECONDITION, error_details "tensorhub.OffloadRequired"
//   ContractViolation, anything else    -> INTERNAL
// with the exception's what() as the message.
//
// Security (README "Security model"): with GrpcServerOptions::auth.token set, every call must
// carry "authorization: Bearer <token>" (UNAUTHENTICATED otherwise), and a call naming a worker
// must carry the session RegisterWorker returned for it (PERMISSION_DENIED otherwise); retain,
// release and attach_snapshot need the operator token or a session of a publisher of the model.
// Workers() never returns endpoints. Optional TLS from certificate and key files.
//
// Plain calls use the synchronous gRPC API (threads grow on demand up to max_threads; past that
// RESOURCE_EXHAUSTED). The long polls, WaitFor and WaitDrained, use the callback API: they hold
// no thread while they wait; one poller thread re-checks them every 2-20 ms, so a flood of
// waiters (up to 65,536, then RESOURCE_EXHAUSTED) never starves heartbeats.
// gRPC stays out of this header (pimpl).
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "tensorhub/coord/auth.hpp"
#include "tensorhub/coord/client.hpp"

namespace tensorhub::coord {

struct GrpcServerOptions {
  int min_pollers = 2;     // threads always waiting for new calls
  int max_pollers = 8;     // idle threads beyond this exit
  int max_threads = 1024;  // all server threads, waiting handlers included
  // Asked before every call: a non-empty answer refuses the call with UNAVAILABLE and that
  // message (a passive standby coordinator; clients then try their next address). Must be
  // thread-safe and quick. Empty = serve everything.
  std::function<std::string()> refuse{};
  // Tokens and TLS; an empty token = no authentication (unit tests of other layers only).
  ServerAuth auth{};
};

class GrpcServer {
 public:
  // `listen_address` is "host:port"; port 0 picks a free port (see port()), e.g. "0.0.0.0:0".
  // TLS when options.auth names a certificate and key; messages up to 256 MiB both ways.
  // Throws TransportError when the address cannot be bound (in use, unresolvable, malformed),
  // UserError for an empty address or inconsistent options.
  GrpcServer(Client& backend, std::string listen_address, GrpcServerOptions options = {});
  // Stops serving (see shutdown()). No thread may still be inside wait() when it runs.
  ~GrpcServer();

  GrpcServer(const GrpcServer&) = delete;
  GrpcServer& operator=(const GrpcServer&) = delete;
  GrpcServer(GrpcServer&&) = delete;
  GrpcServer& operator=(GrpcServer&&) = delete;

  // The port actually bound.
  int port() const;
  // "host:port" for clients to dial, e.g. address_for(hostname) after listening on 0.0.0.0:0.
  // IPv6 literals are bracketed.
  std::string address_for(const std::string& host) const;

  // Stops accepting calls, lets running plain calls finish for up to ~1 s, then cancels the
  // rest; waiting calls return UNAVAILABLE at once. Idempotent, safe from any thread, returns
  // once no handler runs any more (bounded: the backend's plain calls are short and waits are
  // sliced).
  void shutdown();
  // Blocks until shutdown() has completed (called from another thread, e.g. one that sigwait()s);
  // for `tensorhub serve`.
  void wait();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tensorhub::coord
