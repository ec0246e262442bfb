#include "tensorhub/coord/grpc_server.hpp"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <functional>
#include <mutex>
#include <utility>
#include <vector>

#include "grpc_auth.hpp"
#include "grpc_codec.hpp"
#include "grpc_long_polls.hpp"
#include "grpc_malformed.hpp"
#include "grpc_manifest_cache.hpp"
#include "tensorhub.grpc.pb.h"
#include "tensorhub/core/error.hpp"
#include "tensorhub/core/log.hpp"

namespace tensorhub::coord {
namespace {

namespace pb = ::tensorhub::v1;
using std::chrono::milliseconds;

constexpr int kMaxMessageBytes = 256 << 20;
// Long polls (WaitFor, WaitDrained) waiting at once; more get RESOURCE_EXHAUSTED.
constexpr std::size_t kMaxWaiters = 65536;
// How long shutdown() lets running calls finish before cancelling them.
constexpr milliseconds kShutdownGrace{1000};

// The service: authenticate, decode, forward to the backend, encode; exceptions become status
// codes. WaitFor and WaitDrained are callback-API calls polled by `polls_` (no thread each).
using ServiceBase = pb::Coordinator::WithCallbackMethod_WaitFor<
    pb::Coordinator::WithCallbackMethod_WaitDrained<pb::Coordinator::Service>>;

class Service final : public ServiceBase {
 public:
  Service(Client& backend, std::function<std::string()> refuse, ServerAuth auth)
      : backend_(backend), refuse_(std::move(refuse)), gate_(std::move(auth)), log_("coord.grpc") {}

  // Makes waiting calls return UNAVAILABLE at once.
  void stop() { polls_.stop(); }
  const Gatekeeper& gate() const { return gate_; }

  grpc::Status RegisterWorker(grpc::ServerContext* ctx, const pb::RegisterWorkerRequest* req,
                              pb::RegisterWorkerReply* rep) override {
    return guarded("RegisterWorker", *ctx, [&](Role) {
      const auto id = backend_.register_worker(codec::from_proto(req->info()));
      rep->set_worker(id);
      rep->set_session(gate_.open(id));
    });
  }

  grpc::Status DeregisterWorker(grpc::ServerContext* ctx, const pb::DeregisterWorkerRequest* req,
                                pb::DeregisterWorkerReply*) override {
    return guarded("DeregisterWorker", *ctx, [&](Role role) {
      gate_.check_worker(*ctx, role, req->worker());
      backend_.deregister_worker(req->worker());
      gate_.close(req->worker());
    });
  }

  grpc::Status Heartbeat(grpc::ServerContext* ctx, const pb::HeartbeatRequest* req, pb::HeartbeatReply* rep) override {
    return guarded("Heartbeat", *ctx, [&](Role role) {
      gate_.check_worker(*ctx, role, req->worker());
      rep->set_lease_ms(backend_.heartbeat(req->worker()).lease_ms);
    });
  }

  grpc::Status Publish(grpc::ServerContext* ctx, const pb::PublishRequest* req, pb::PublishReply* rep) override {
    return guarded("Publish", *ctx, [&](Role role) {
      gate_.check_worker(*ctx, role, req->worker());
      *rep = codec::to_proto(backend_.publish(codec::from_proto(*req)));
    });
  }

  grpc::Status Unpublish(grpc::ServerContext* ctx, const pb::UnpublishRequest* req, pb::UnpublishReply* rep) override {
    return guarded("Unpublish", *ctx, [&](Role role) {
      gate_.check_worker(*ctx, role, req->worker());
      rep->set_pins(backend_.unpublish(req->worker(), req->model(), req->version()));
    });
  }

  grpc::ServerUnaryReactor* WaitDrained(grpc::CallbackServerContext* ctx, const pb::WaitDrainedRequest* req,
                                        pb::WaitDrainedReply* rep) override {
    const auto end = deadline_after(req->timeout_ms());
    bool checked = false;
    return polls_.start(ctx, end, [this, ctx, req, rep, checked](bool last) mutable -> std::optional<grpc::Status> {
      std::optional<grpc::Status> answer;
      auto status = guarded("WaitDrained", *ctx, [&](Role role) {
        if (!checked) gate_.check_worker(*ctx, role, req->worker());
        checked = true;
        const auto pins = backend_.wait_drained(req->worker(), req->model(), req->version(), milliseconds::zero());
        if (pins == 0 || last) {
          rep->set_pins(pins);
          answer = grpc::Status::OK;
        }
      });
      if (!status.ok()) return status;
      return answer;
    });
  }

  grpc::Status Retain(grpc::ServerContext* ctx, const pb::RetainRequest* req, pb::RetainReply*) override {
    return guarded("Retain", *ctx, [&](Role role) {
      require_publisher(*ctx, role, req->model(), "retain");
      backend_.retain(req->model(), req->version());
    });
  }

  grpc::Status Release(grpc::ServerContext* ctx, const pb::ReleaseRequest* req, pb::ReleaseReply*) override {
    return guarded("Release", *ctx, [&](Role role) {
      require_publisher(*ctx, role, req->model(), "release");
      backend_.release(req->model(), req->version());
    });
  }

  grpc::Status Latest(grpc::ServerContext* ctx, const pb::LatestRequest* req, pb::LatestReply* rep) override {
    return guarded("Latest", *ctx, [&](Role) {
      if (const auto v = backend_.latest(req->model())) rep->set_version(*v);
    });
  }

  grpc::ServerUnaryReactor* WaitFor(grpc::CallbackServerContext* ctx, const pb::WaitForRequest* req,
                                    pb::WaitForReply* rep) override {
    const auto end = deadline_after(req->timeout_ms());
    return polls_.start(ctx, end, [this, ctx, req, rep](bool last) -> std::optional<grpc::Status> {
      std::optional<grpc::Status> answer;
      auto status = guarded("WaitFor", *ctx, [&](Role) {
        const auto newer_than = req->has_newer_than() ? std::optional<std::uint64_t>(req->newer_than()) : std::nullopt;
        const auto v = backend_.wait_for(req->model(), newer_than, milliseconds::zero());
        if (v) rep->set_version(*v);
        if (v || last) answer = grpc::Status::OK;
      });
      if (!status.ok()) return status;
      return answer;
    });
  }

  grpc::Status Resolve(grpc::ServerContext* ctx, const pb::ResolveRequest* req, pb::ResolveReply* rep) override {
    return guarded("Resolve", *ctx, [&](Role role) {
      gate_.check_worker(*ctx, role, req->reader());
      const auto reply = backend_.resolve(codec::from_proto(*req));
      *rep->mutable_manifest() = *manifests_.encoded(reply.manifest);  // encoded once per version
      rep->set_snapshot(reply.snapshot);
      rep->set_seq(reply.seq);
    });
  }

  grpc::Status OfferRelay(grpc::ServerContext* ctx, const pb::RelayOffer* req, pb::OfferRelayReply*) override {
    return guarded("OfferRelay", *ctx, [&](Role role) {
      gate_.check_worker(*ctx, role, req->reader());
      backend_.offer_relay(codec::from_proto(*req));
    });
  }

  grpc::Status Acquire(grpc::ServerContext* ctx, const pb::AcquireRequest* req, pb::AcquireReply* rep) override {
    return guarded("Acquire", *ctx, [&](Role role) {
      gate_.check_worker(*ctx, role, req->reader());
      *rep = codec::to_proto(backend_.acquire(codec::from_proto(*req)));
    });
  }

  grpc::Status Plan(grpc::ServerContext* ctx, const pb::PlanRequest* req, pb::PlanReply* rep) override {
    return guarded("Plan", *ctx, [&](Role role) {
      gate_.check_worker(*ctx, role, req->reader());
      *rep = codec::to_proto(backend_.plan(codec::from_proto(*req)));
    });
  }

  grpc::Status Complete(grpc::ServerContext* ctx, const pb::CompleteRequest* req, pb::CompleteReply*) override {
    return guarded("Complete", *ctx, [&](Role role) {
      gate_.check_worker(*ctx, role, req->reader());
      backend_.complete(codec::from_proto(*req));
    });
  }

  grpc::Status Finish(grpc::ServerContext* ctx, const pb::FinishRequest* req, pb::FinishReply*) override {
    return guarded("Finish", *ctx, [&](Role role) {
      gate_.check_worker(*ctx, role, req->reader());
      backend_.finish(codec::from_proto(*req));
    });
  }

  grpc::Status Status(grpc::ServerContext* ctx, const pb::StatusRequest*, pb::StatusReply* rep) override {
    return guarded("Status", *ctx, [&](Role) { *rep = codec::to_proto(backend_.status()); });
  }

  grpc::Status Workers(grpc::ServerContext* ctx, const pb::WorkersRequest*, pb::WorkersReply* rep) override {
    return guarded("Workers", *ctx, [&](Role) {
      *rep = codec::to_proto(backend_.workers());
      // Endpoints are transport descriptors: only the coordinator hands them out, to readers.
      for (auto& w : *rep->mutable_workers()) w.mutable_info()->clear_endpoint();
    });
  }

  grpc::Status AttachSnapshot(grpc::ServerContext* ctx, const pb::AttachSnapshotRequest* req,
                              pb::AttachSnapshotReply*) override {
    return guarded("AttachSnapshot", *ctx, [&](Role role) {
      require_publisher(*ctx, role, req->manifest().model(), "attach a snapshot to");
      const auto [path, manifest] = codec::from_proto(*req);
      backend_.attach_snapshot(path, manifest);
    });
  }

  grpc::Status BeginOffload(grpc::ServerContext* ctx, const pb::BeginOffloadRequest* req,
                            pb::BeginOffloadReply* rep) override {
    return guarded("BeginOffload", *ctx, [&](Role role) {
      gate_.check_worker(*ctx, role, req->worker());
      *rep = codec::to_proto(backend_.begin_offload(req->worker(), req->model(), req->version()));
    });
  }

  grpc::Status EndOffload(grpc::ServerContext* ctx, const pb::EndOffloadRequest* req, pb::EndOffloadReply*) override {
    return guarded("EndOffload", *ctx, [&](Role role) {
      gate_.check_worker(*ctx, role, req->worker());
      backend_.end_offload(req->worker(), req->model(), req->version());
    });
  }

 private:
  // Runs `body`, mapping the error taxonomy onto status codes (GrpcClient inverts this).
  // The caller is authenticated first (UNAUTHENTICATED / PERMISSION_DENIED otherwise).
  template <class Body>
  grpc::Status guarded(const char* rpc, const grpc::ServerContextBase& ctx, Body&& body) const {
    if (refuse_) {
      if (auto why = refuse_(); !why.empty()) return {grpc::StatusCode::UNAVAILABLE, why};
    }
    try {
      body(gate_.authenticate(ctx));
      return grpc::Status::OK;
    } catch (const Denied& e) {
      log_.warn(std::string(rpc) + " refused from " + ctx.peer() + ": " + e.what());
      return {e.code(), e.what()};
    } catch (const UnknownWorker& e) {
      return {grpc::StatusCode::NOT_FOUND, e.what(), codec::kUnknownWorkerDetail};
    } catch (const NotFoundError& e) {
      return {grpc::StatusCode::NOT_FOUND, e.what()};
    } catch (const OffloadRequired& e) {
      return {grpc::StatusCode::FAILED_PRECONDITION, e.what(), codec::kOffloadRequiredDetail};
    } catch (const UserError& e) {
      return {grpc::StatusCode::INVALID_ARGUMENT, e.what()};
    } catch (const TimeoutError& e) {
      return {grpc::StatusCode::DEADLINE_EXCEEDED, e.what()};
    } catch (const TransportError& e) {
      return {grpc::StatusCode::UNAVAILABLE, e.what()};
    } catch (const PlanUnsupported& e) {  // the backend does not plan: the client acquires
      return {grpc::StatusCode::UNIMPLEMENTED, e.what()};
    } catch (const std::exception& e) {
      log_.error(std::string(rpc) + ": " + e.what());
      return {grpc::StatusCode::INTERNAL, e.what()};
    } catch (...) {
      log_.error(std::string(rpc) + ": unknown exception");
      return {grpc::StatusCode::INTERNAL, "unknown exception"};
    }
  }

  static std::chrono::steady_clock::time_point deadline_after(std::uint64_t timeout_ms) {
    return std::chrono::steady_clock::now() + codec::timeout_from_proto(timeout_ms);
  }

  // retain/release/attach: an operator, or a worker publishing a version of `model`.
  void require_publisher(const grpc::ServerContextBase& ctx, Role role, const std::string& model,
                         const char* what) const {
    if (role != Role::kWorker) return;
    const auto callers = gate_.callers(ctx);
    if (!callers.empty()) {
      for (const auto& m : backend_.status()) {
        if (m.model != model) continue;
        for (const auto& v : m.versions) {
          for (const auto& h : v.holder_list) {
            if (h.origin && std::find(callers.begin(), callers.end(), h.worker) != callers.end()) return;
          }
        }
      }
    }
    throw Denied(grpc::StatusCode::PERMISSION_DENIED,
                 std::string("only a publisher of model '") + model + "' or an operator may " + what + " its versions");
  }

  Client& backend_;
  std::function<std::string()> refuse_;
  Gatekeeper gate_;
  Logger log_;
  ManifestCache manifests_;
  LongPolls polls_{kMaxWaiters};
};

}  // namespace

struct GrpcServer::Impl {
  std::string listen_address;
  Service service;  // declared before `server`: outlives it
  std::unique_ptr<grpc::Server> server;
  int port = 0;
  std::once_flag shutdown_once;

  Impl(Client& backend, std::string listen, const GrpcServerOptions& options)
      : listen_address(std::move(listen)), service(backend, options.refuse, options.auth) {
    if (listen_address.empty()) throw UserError("coordinator listen address is empty");
    if (options.min_pollers < 1 || options.max_pollers < options.min_pollers ||
        options.max_threads <= options.max_pollers) {
      throw UserError("coordinator server: need 1 <= min_pollers <= max_pollers < max_threads");
    }
    grpc::ServerBuilder builder;
    builder.AddListeningPort(listen_address, service.gate().credentials(), &port);
    builder.RegisterService(&service);
    builder.SetMaxReceiveMessageSize(kMaxMessageBytes);
    builder.SetMaxSendMessageSize(kMaxMessageBytes);
    // gRPC sets SO_REUSEPORT by default: a second server on the same port would "succeed" and
    // steal connections. Fail loudly instead.
    builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
    builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::MIN_POLLERS, options.min_pollers);
    builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::MAX_POLLERS, options.max_pollers);
    grpc::ResourceQuota quota;
    quota.SetMaxThreads(options.max_threads);
    builder.SetResourceQuota(quota);
    // A body that does not parse: INVALID_ARGUMENT with a message, not gRPC's bare INTERNAL.
    std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> interceptors;
    interceptors.push_back(malformed_request_interceptor(service.gate()));
    builder.experimental().SetInterceptorCreators(std::move(interceptors));
    server = builder.BuildAndStart();
    if (!server || port == 0) {
      if (server) server->Shutdown();
      throw TransportError("coordinator: cannot listen on " + listen_address);
    }
  }
};

GrpcServer::GrpcServer(Client& backend, std::string listen_address, GrpcServerOptions options)
    : impl_(std::make_unique<Impl>(backend, std::move(listen_address), options)) {}

GrpcServer::~GrpcServer() { shutdown(); }

int GrpcServer::port() const { return impl_->port; }

std::string GrpcServer::address_for(const std::string& host) const {
  const bool ipv6_literal = host.find(':') != std::string::npos && !host.starts_with('[');
  return (ipv6_literal ? "[" + host + "]" : host) + ":" + std::to_string(impl_->port);
}

void GrpcServer::shutdown() {
  std::call_once(impl_->shutdown_once, [this] {
    impl_->service.stop();
    impl_->server->Shutdown(std::chrono::system_clock::now() + kShutdownGrace);
  });
}

void GrpcServer::wait() { impl_->server->Wait(); }

}  // namespace tensorhub::coord
