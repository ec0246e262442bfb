#include "tensorhub/coord/grpc_server.hpp"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <mutex>
#include <type_traits>
#include <utility>

#include "grpc_codec.hpp"
#include "tensorhub.grpc.pb.h"
#include "tensorhub/core/error.hpp"
#include "tensorhub/core/log.hpp"

namespace tensorhub::coord {
namespace {

namespace pb = ::tensorhub::v1;
using std::chrono::milliseconds;

constexpr int kMaxMessageBytes = 256 << 20;
// Waits are cut into slices this long so that cancellation and shutdown are noticed promptly.
constexpr milliseconds kWaitSlice{200};
// How long shutdown() lets running calls finish before cancelling them.
constexpr milliseconds kShutdownGrace{1000};

// The service: decode, forward to the backend, encode; exceptions become status codes.
class Service final : public pb::Coordinator::Service {
 public:
  Service(Client& backend, std::function<std::string()> refuse)
      : backend_(backend), refuse_(std::move(refuse)), log_("coord.grpc") {}

  // Makes waiting calls return UNAVAILABLE at their next slice.
  void stop() { stopping_.store(true); }

  grpc::Status RegisterWorker(grpc::ServerContext*, const pb::RegisterWorkerRequest* req,
                              pb::RegisterWorkerReply* rep) override {
    return guarded("RegisterWorker",
                   [&] { rep->set_worker(backend_.register_worker(codec::from_proto(req->info()))); });
  }

  grpc::Status DeregisterWorker(grpc::ServerContext*, const pb::DeregisterWorkerRequest* req,
                                pb::DeregisterWorkerReply*) override {
    return guarded("DeregisterWorker", [&] { backend_.deregister_worker(req->worker()); });
  }

  grpc::Status Heartbeat(grpc::ServerContext*, const pb::HeartbeatRequest* req, pb::HeartbeatReply* rep) override {
    return guarded("Heartbeat", [&] { rep->set_lease_ms(backend_.heartbeat(req->worker()).lease_ms); });
  }

  grpc::Status Publish(grpc::ServerContext*, const pb::PublishRequest* req, pb::PublishReply* rep) override {
    return guarded("Publish", [&] { *rep = codec::to_proto(backend_.publish(codec::from_proto(*req))); });
  }

  grpc::Status Unpublish(grpc::ServerContext*, const pb::UnpublishRequest* req, pb::UnpublishReply* rep) override {
    return guarded("Unpublish",
                   [&] { rep->set_pins(backend_.unpublish(req->worker(), req->model(), req->version())); });
  }

  grpc::Status WaitDrained(grpc::ServerContext* ctx, const pb::WaitDrainedRequest* req,
                           pb::WaitDrainedReply* rep) override {
    return guarded("WaitDrained", [&] {
      const auto pins = wait_in_slices(
          *ctx, codec::timeout_from_proto(req->timeout_ms()),
          [&](milliseconds slice) { return backend_.wait_drained(req->worker(), req->model(), req->version(), slice); },
          [](std::uint32_t left) { return left == 0; });
      rep->set_pins(pins);
    });
  }

  grpc::Status Retain(grpc::ServerContext*, const pb::RetainRequest* req, pb::RetainReply*) override {
    return guarded("Retain", [&] { backend_.retain(req->model(), req->version()); });
  }

  grpc::Status Release(grpc::ServerContext*, const pb::ReleaseRequest* req, pb::ReleaseReply*) override {
    return guarded("Release", [&] { backend_.release(req->model(), req->version()); });
  }

  grpc::Status Latest(grpc::ServerContext*, const pb::LatestRequest* req, pb::LatestReply* rep) override {
    return guarded("Latest", [&] {
      if (const auto v = backend_.latest(req->model())) rep->set_version(*v);
    });
  }

  grpc::Status WaitFor(grpc::ServerContext* ctx, const pb::WaitForRequest* req, pb::WaitForReply* rep) override {
    return guarded("WaitFor", [&] {
      const auto newer_than = req->has_newer_than() ? std::optional<std::uint64_t>(req->newer_than()) : std::nullopt;
      const auto v = wait_in_slices(
          *ctx, codec::timeout_from_proto(req->timeout_ms()),
          [&](milliseconds slice) { return backend_.wait_for(req->model(), newer_than, slice); },
          [](const std::optional<std::uint64_t>& found) { return found.has_value(); });
      if (v) rep->set_version(*v);
    });
  }

  grpc::Status Resolve(grpc::ServerContext*, const pb::ResolveRequest* req, pb::ResolveReply* rep) override {
    return guarded("Resolve", [&] { *rep = codec::to_proto(backend_.resolve(codec::from_proto(*req))); });
  }

  grpc::Status OfferRelay(grpc::ServerContext*, const pb::RelayOffer* req, pb::OfferRelayReply*) override {
    return guarded("OfferRelay", [&] { backend_.offer_relay(codec::from_proto(*req)); });
  }

  grpc::Status Acquire(grpc::ServerContext*, const pb::AcquireRequest* req, pb::AcquireReply* rep) override {
    return guarded("Acquire", [&] { *rep = codec::to_proto(backend_.acquire(codec::from_proto(*req))); });
  }

  grpc::Status Complete(grpc::ServerContext*, const pb::CompleteRequest* req, pb::CompleteReply*) override {
    return guarded("Complete", [&] { backend_.complete(codec::from_proto(*req)); });
  }

  grpc::Status Finish(grpc::ServerContext*, const pb::FinishRequest* req, pb::FinishReply*) override {
    return guarded("Finish", [&] { backend_.finish(codec::from_proto(*req)); });
  }

  grpc::Status Status(grpc::ServerContext*, const pb::StatusRequest*, pb::StatusReply* rep) override {
    return guarded("Status", [&] { *rep = codec::to_proto(backend_.status()); });
  }

  grpc::Status Workers(grpc::ServerContext*, const pb::WorkersRequest*, pb::WorkersReply* rep) override {
    return guarded("Workers", [&] { *rep = codec::to_proto(backend_.workers()); });
  }

  grpc::Status AttachSnapshot(grpc::ServerContext*, const pb::AttachSnapshotRequest* req,
                              pb::AttachSnapshotReply*) override {
    return guarded("AttachSnapshot", [&] {
      const auto [path, manifest] = codec::from_proto(*req);
      backend_.attach_snapshot(path, manifest);
    });
  }

  grpc::Status BeginOffload(grpc::ServerContext*, const pb::BeginOffloadRequest* req,
                            pb::BeginOffloadReply* rep) override {
    return guarded("BeginOffload", [&] {
      *rep = codec::to_proto(backend_.begin_offload(req->worker(), req->model(), req->version()));
    });
  }

  grpc::Status EndOffload(grpc::ServerContext*, const pb::EndOffloadRequest* req, pb::EndOffloadReply*) override {
    return guarded("EndOffload", [&] { backend_.end_offload(req->worker(), req->model(), req->version()); });
  }

 private:
  // Runs `body`, mapping the error taxonomy onto status codes (GrpcClient inverts this).
  template <class Body>
  grpc::Status guarded(const char* rpc, Body&& body) const {
    if (refuse_) {
      if (auto why = refuse_(); !why.empty()) return {grpc::StatusCode::UNAVAILABLE, why};
    }
    try {
      body();
      return grpc::Status::OK;
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
    } catch (const std::exception& e) {
      log_.error(std::string(rpc) + ": " + e.what());
      return {grpc::StatusCode::INTERNAL, e.what()};
    } catch (...) {
      log_.error(std::string(rpc) + ": unknown exception");
      return {grpc::StatusCode::INTERNAL, "unknown exception"};
    }
  }

  // Calls `attempt(slice)` with slices of the timeout until `done(result)`, the timeout passes
  // (then the last result is the answer), or the call is cancelled or the server stops (then
  // TransportError). Slicing keeps a waiting call from pinning its thread past a cancellation
  // or shutdown; the backend's waits are level-triggered, so repeating them is harmless.
  template <class Attempt, class Done>
  std::invoke_result_t<Attempt&, milliseconds> wait_in_slices(grpc::ServerContext& ctx, milliseconds timeout,
                                                              Attempt&& attempt, Done&& done) const {
    const auto end = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      const auto left = std::chrono::ceil<milliseconds>(end - std::chrono::steady_clock::now());
      auto result = attempt(std::clamp(left, milliseconds::zero(), kWaitSlice));
      if (done(result) || std::chrono::steady_clock::now() >= end) return result;
      if (stopping_.load()) throw TransportError("coordinator is shutting down");
      if (ctx.IsCancelled()) throw TransportError("call cancelled by the client");
    }
  }

  Client& backend_;
  std::function<std::string()> refuse_;
  Logger log_;
  std::atomic<bool> stopping_{false};
};

}  // namespace

struct GrpcServer::Impl {
  std::string listen_address;
  Service service;  // declared before `server`: outlives it
  std::unique_ptr<grpc::Server> server;
  int port = 0;
  std::once_flag shutdown_once;

  Impl(Client& backend, std::string listen, const GrpcServerOptions& options)
      : listen_address(std::move(listen)), service(backend, options.refuse) {
    if (listen_address.empty()) throw UserError("coordinator listen address is empty");
    if (options.min_pollers < 1 || options.max_pollers < options.min_pollers ||
        options.max_threads <= options.max_pollers) {
      throw UserError("coordinator server: need 1 <= min_pollers <= max_pollers < max_threads");
    }
    grpc::ServerBuilder builder;
    builder.AddListeningPort(listen_address, grpc::InsecureServerCredentials(), &port);
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
