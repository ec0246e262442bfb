#include "tensorhub/coord/grpc_client.hpp"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>
#include <utility>
#include <vector>

#include "grpc_codec.hpp"
#include "grpc_retry.hpp"
#include "tensorhub.grpc.pb.h"
#include "tensorhub/core/error.hpp"
#include "tensorhub/core/log.hpp"
#include "tensorhub/core/validate.hpp"

namespace tensorhub::coord {
namespace {

namespace pb = ::tensorhub::v1;
using Stub = pb::Coordinator::Stub;

constexpr int kMaxMessageBytes = 256 << 20;
// Least time a connection attempt (TCP connect, TLS and HTTP/2 handshakes) is given.
constexpr std::chrono::milliseconds kMinConnectTimeout{5000};

template <class Req, class Rep>
using Method = grpc::Status (Stub::*)(grpc::ClientContext*, const Req&, Rep*);

// Names are checked here with the coordinator's own check (same UserError text), before they
// are sent: a proto3 string cannot even carry invalid UTF-8.
void check_model(const std::string& model) { validate_name("model name", model); }

std::string read_pem(const std::string& path, const char* what) {
  std::ifstream in(path);
  if (!in) throw UserError(std::string("TLS ") + what + " file " + path + ": cannot be read");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void check_tensors(const std::vector<TensorSpec>& tensors) {
  for (const auto& t : tensors) validate_name("tensor name", t.name);
}

}  // namespace

struct GrpcClient::Impl {
  // One coordinator address: a primary, or a standby that takes over when it dies.
  struct Target {
    std::string address;
    std::shared_ptr<grpc::Channel> channel;
    std::unique_ptr<Stub> stub;
  };

  std::string address;  // as given: "host:port[,host:port...]"
  std::chrono::milliseconds rpc_deadline;
  ClientAuth auth;
  std::string bearer;  // "Bearer <token>", empty when there is no token
  // Session secrets of the workers registered through this client, sent with every call
  // ("<worker>:<secret>"): the coordinator lets a call act only for a worker whose session it carries.
  mutable std::mutex sessions_mu;
  std::map<WorkerId, std::string> sessions;
  std::vector<Target> targets;
  mutable std::atomic<std::size_t> current{0};  // the target calls go to first
  Logger log{"coord.client"};

  Impl(std::string addr, std::chrono::milliseconds deadline, ClientAuth credentials)
      : address(std::move(addr)), rpc_deadline(deadline), auth(std::move(credentials)) {
    if (!auth.token.empty()) bearer = "Bearer " + auth.token;
    if (address.empty()) throw UserError("coordinator address is empty");
    if (rpc_deadline <= std::chrono::milliseconds::zero()) {
      throw UserError("coordinator " + address + ": RPC deadline must be positive");
    }
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(kMaxMessageBytes);
    args.SetMaxSendMessageSize(kMaxMessageBytes);
    // A restarted or newly active coordinator is found within ~0.5 s, not after gRPC's default
    // reconnect backoff (up to 120 s): attempts start 100 ms apart, growing to 500 ms.
    args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
    args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 500);
    // gRPC reads "min reconnect backoff" as the least time one connection attempt is given
    // (its MIN_CONNECT_TIMEOUT, connection-backoff.md): at 100 ms, a TCP + HTTP/2 handshake
    // slower than the backoff on a loaded host was cut every time ("tcp handshaker shutdown")
    // and the call failed with the coordinator up. A refused connection still fails at once.
    args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, static_cast<int>(kMinConnectTimeout.count()));
    if (!auth.tls_server_name.empty()) args.SetSslTargetNameOverride(auth.tls_server_name);
    const auto creds = channel_credentials();
    std::size_t begin = 0;
    for (;;) {
      const auto comma = address.find(',', begin);
      auto one = address.substr(begin, comma == std::string::npos ? std::string::npos : comma - begin);
      if (one.empty()) throw UserError("coordinator address list '" + address + "' has an empty entry");
      Target t;
      t.address = one;
      t.channel = grpc::CreateCustomChannel(one, creds, args);
      if (!t.channel) throw TransportError("coordinator " + one + ": cannot create a gRPC channel");
      t.stub = pb::Coordinator::NewStub(t.channel);
      targets.push_back(std::move(t));
      if (comma == std::string::npos) break;
      begin = comma + 1;
    }
  }

  std::shared_ptr<grpc::ChannelCredentials> channel_credentials() const {
    if (auth.tls_ca_file.empty()) {
      if (!auth.tls_cert_file.empty()) throw UserError("a TLS client certificate needs the CA (TENSORHUB_TLS_CA)");
      return grpc::InsecureChannelCredentials();
    }
    grpc::SslCredentialsOptions opts;
    opts.pem_root_certs = read_pem(auth.tls_ca_file, "CA");
    if (!auth.tls_cert_file.empty() || !auth.tls_key_file.empty()) {
      if (auth.tls_cert_file.empty() || auth.tls_key_file.empty()) {
        throw UserError("a TLS client certificate needs both TENSORHUB_TLS_CERT and TENSORHUB_TLS_KEY");
      }
      opts.pem_cert_chain = read_pem(auth.tls_cert_file, "certificate");
      opts.pem_private_key = read_pem(auth.tls_key_file, "key");
    }
    return grpc::SslCredentials(opts);
  }

  void add_credentials(grpc::ClientContext& ctx) const {
    if (!bearer.empty()) ctx.AddMetadata("authorization", bearer);
    std::lock_guard lock(sessions_mu);
    for (const auto& [id, secret] : sessions) ctx.AddMetadata("x-tensorhub-session", std::to_string(id) + ":" + secret);
  }

  // Deadline for a call that may wait `timeout` on the server.
  std::chrono::milliseconds wait_deadline(std::chrono::milliseconds timeout) const {
    return std::clamp(timeout, std::chrono::milliseconds::zero(), codec::kMaxWireTimeout) + rpc_deadline;
  }

  std::string context(const char* rpc) const { return context(rpc, address); }
  static std::string context(const char* rpc, const std::string& where) {
    return "coordinator " + where + ": " + rpc + ": ";
  }

  [[noreturn]] void throw_status(const char* rpc, const grpc::Status& status, const std::string& where) const {
    std::string what = context(rpc, where) + status.error_message();
    switch (status.error_code()) {
      case grpc::StatusCode::FAILED_PRECONDITION:
        if (status.error_details() == codec::kOffloadRequiredDetail) throw OffloadRequired(what);
        throw UserError(what);
      case grpc::StatusCode::INVALID_ARGUMENT:
      case grpc::StatusCode::UNAUTHENTICATED:
      case grpc::StatusCode::PERMISSION_DENIED:
        throw UserError(what);
      case grpc::StatusCode::NOT_FOUND:
        if (status.error_details() == codec::kUnknownWorkerDetail) throw UnknownWorker(what);
        throw NotFoundError(what);
      case grpc::StatusCode::DEADLINE_EXCEEDED:
        throw TimeoutError(what);
      case grpc::StatusCode::INTERNAL:
        throw ContractViolation(what);
      case grpc::StatusCode::UNIMPLEMENTED:  // an older server: e.g. no plan-based pulls
        throw PlanUnsupported(what);
      default:
        throw TransportError(what);
    }
  }

  // The deadline passed with the coordinator still unavailable: what was tried, and for how long.
  [[noreturn]] void throw_unavailable(const char* rpc, const grpc::Status& status, const std::string& where,
                                      std::size_t tried, std::chrono::milliseconds deadline) const {
    throw TransportError(context(rpc, where) + "unavailable for the call's whole deadline (" +
                         std::to_string(deadline.count()) + " ms, " + std::to_string(tried) +
                         " attempt(s)); last error: " + status.error_message());
  }

  // One unary call with a deadline; a non-OK status becomes a typed exception. With several
  // addresses, UNAVAILABLE (down, or a passive standby) moves on to the next one, round and
  // round until the deadline: a standby that takes over within the deadline is found. With one
  // address, UNAVAILABLE is retried until the deadline.
  template <class Req, class Rep>
  Rep call(const char* rpc, Method<Req, Rep> method, const Req& request, std::chrono::milliseconds deadline) const {
    const auto start = std::chrono::steady_clock::now();
    const auto end = start + deadline;
    for (std::size_t tried = 1;; ++tried) {
      auto idx = current.load();
      const Target& t = targets[idx];
      grpc::ClientContext ctx;
      add_credentials(ctx);
      ctx.set_deadline(std::chrono::system_clock::now() +
                       std::max(std::chrono::milliseconds(1),
                                std::chrono::ceil<std::chrono::milliseconds>(end - std::chrono::steady_clock::now())));
      Rep reply;
      const grpc::Status status = ((*t.stub).*method)(&ctx, request, &reply);
      if (status.ok()) return reply;
      if (detail::server_busy(status)) {
        // The coordinator had no thread for the call (all max_threads busy, e.g. 1,024 readers
        // calling at once): shed load, so try again after a short randomised pause.
        const auto pause = detail::busy_pause(tried);
        if (std::chrono::steady_clock::now() + pause >= end) throw_status(rpc, status, t.address);
        std::this_thread::sleep_for(pause);
        continue;
      }
      if (status.error_code() != grpc::StatusCode::UNAVAILABLE) throw_status(rpc, status, t.address);
      if (targets.size() == 1) {
        // One coordinator: UNAVAILABLE (no connection yet, a connection that failed to come up,
        // a standby that does not serve yet) is tried again until the call's deadline. The
        // request did not reach a serving coordinator, so this is safe for every call.
        constexpr std::chrono::milliseconds kPause{100};
        if (std::chrono::steady_clock::now() + kPause >= end)
          throw_unavailable(rpc, status, t.address, tried, deadline);
        std::this_thread::sleep_for(kPause);
        continue;
      }
      const auto next = (idx + 1) % targets.size();
      if (current.compare_exchange_strong(idx, next)) {
        log.info("coordinator " + t.address + " unavailable (" + status.error_message() + "); trying " +
                 targets[next].address);
      }
      if (tried % targets.size() == 0) {  // a full round failed: pause, unless out of time
        constexpr std::chrono::milliseconds kPause{100};
        if (std::chrono::steady_clock::now() + kPause >= end) throw_unavailable(rpc, status, address, tried, deadline);
        std::this_thread::sleep_for(kPause);
      }
    }
  }

  template <class Req, class Rep>
  Rep call(const char* rpc, Method<Req, Rep> method, const Req& request) const {
    return call(rpc, method, request, rpc_deadline);
  }

  // A reply our codec rejects came from a broken or incompatible coordinator: not the caller's
  // fault, so it surfaces as a TransportError rather than the codec's UserError.
  template <class F>
  auto decode(const char* rpc, F&& f) const -> decltype(f()) {
    try {
      return f();
    } catch (const UserError& e) {
      throw TransportError(context(rpc) + "bad reply: " + e.what());
    }
  }
};

GrpcClient::GrpcClient(std::string address, std::chrono::milliseconds rpc_deadline, ClientAuth auth)
    : impl_(std::make_unique<Impl>(std::move(address), rpc_deadline, std::move(auth))) {}

GrpcClient::~GrpcClient() = default;

const std::string& GrpcClient::address() const { return impl_->address; }

WorkerId GrpcClient::register_worker(const WorkerInfo& info) {
  pb::RegisterWorkerRequest req;
  *req.mutable_info() = codec::to_proto(info);
  const auto rep = impl_->call("RegisterWorker", &Stub::RegisterWorker, req);
  if (!rep.session().empty()) {
    std::lock_guard lock(impl_->sessions_mu);
    impl_->sessions[rep.worker()] = rep.session();
  }
  return rep.worker();
}

void GrpcClient::deregister_worker(WorkerId worker) {
  pb::DeregisterWorkerRequest req;
  req.set_worker(worker);
  impl_->call("DeregisterWorker", &Stub::DeregisterWorker, req);
  std::lock_guard lock(impl_->sessions_mu);
  impl_->sessions.erase(worker);
}

HeartbeatReply GrpcClient::heartbeat(WorkerId worker) {
  pb::HeartbeatRequest req;
  req.set_worker(worker);
  return HeartbeatReply{impl_->call("Heartbeat", &Stub::Heartbeat, req).lease_ms()};
}

std::vector<WorkerStatus> GrpcClient::workers() {
  const auto rep = impl_->call("Workers", &Stub::Workers, pb::WorkersRequest{});
  return impl_->decode("Workers", [&] { return codec::from_proto(rep); });
}

PublishReply GrpcClient::publish(const PublishRequest& request) {
  check_model(request.model);
  validate_name("publishing group name", request.group.name);
  check_tensors(request.shard.tensors);
  return codec::from_proto(impl_->call("Publish", &Stub::Publish, codec::to_proto(request)));
}

std::uint32_t GrpcClient::unpublish(WorkerId worker, const std::string& model, std::uint64_t version) {
  check_model(model);
  pb::UnpublishRequest req;
  req.set_worker(worker);
  req.set_model(model);
  req.set_version(version);
  return impl_->call("Unpublish", &Stub::Unpublish, req).pins();
}

std::uint32_t GrpcClient::wait_drained(WorkerId worker, const std::string& model, std::uint64_t version,
                                       std::chrono::milliseconds timeout) {
  check_model(model);
  pb::WaitDrainedRequest req;
  req.set_worker(worker);
  req.set_model(model);
  req.set_version(version);
  req.set_timeout_ms(codec::timeout_to_proto(timeout));
  return impl_->call("WaitDrained", &Stub::WaitDrained, req, impl_->wait_deadline(timeout)).pins();
}

void GrpcClient::retain(const std::string& model, std::uint64_t version) {
  check_model(model);
  pb::RetainRequest req;
  req.set_model(model);
  req.set_version(version);
  impl_->call("Retain", &Stub::Retain, req);
}

void GrpcClient::release(const std::string& model, std::uint64_t version) {
  check_model(model);
  pb::ReleaseRequest req;
  req.set_model(model);
  req.set_version(version);
  impl_->call("Release", &Stub::Release, req);
}

std::optional<std::uint64_t> GrpcClient::latest(const std::string& model) {
  check_model(model);
  pb::LatestRequest req;
  req.set_model(model);
  const auto rep = impl_->call("Latest", &Stub::Latest, req);
  return rep.has_version() ? std::optional<std::uint64_t>(rep.version()) : std::nullopt;
}

std::optional<std::uint64_t> GrpcClient::wait_for(const std::string& model, std::optional<std::uint64_t> newer_than,
                                                  std::chrono::milliseconds timeout) {
  check_model(model);
  pb::WaitForRequest req;
  req.set_model(model);
  if (newer_than) req.set_newer_than(*newer_than);
  req.set_timeout_ms(codec::timeout_to_proto(timeout));
  const auto rep = impl_->call("WaitFor", &Stub::WaitFor, req, impl_->wait_deadline(timeout));
  return rep.has_version() ? std::optional<std::uint64_t>(rep.version()) : std::nullopt;
}

ResolveReply GrpcClient::resolve(const ResolveRequest& request) {
  check_model(request.model);
  validate_name("reading group name", request.group.name);
  const auto rep = impl_->call("Resolve", &Stub::Resolve, codec::to_proto(request));
  return impl_->decode("Resolve", [&] { return codec::from_proto(rep); });
}

void GrpcClient::offer_relay(const RelayOffer& offer) {
  check_model(offer.model);
  impl_->call("OfferRelay", &Stub::OfferRelay, codec::to_proto(offer));
}

AcquireReply GrpcClient::acquire(const AcquireRequest& request) {
  check_model(request.model);
  const auto rep = impl_->call("Acquire", &Stub::Acquire, codec::to_proto(request));
  return impl_->decode("Acquire", [&] { return codec::from_proto(rep); });
}

PlanReply GrpcClient::plan(const PlanRequest& request) {
  check_model(request.model);
  const auto rep = impl_->call("Plan", &Stub::Plan, codec::to_proto(request));
  return impl_->decode("Plan", [&] { return codec::from_proto(rep); });
}

void GrpcClient::complete(const CompleteRequest& request) {
  check_model(request.model);
  impl_->call("Complete", &Stub::Complete, codec::to_proto(request));
}

void GrpcClient::finish(const FinishRequest& request) {
  check_model(request.model);
  validate_name("reading group name", request.group.name);
  impl_->call("Finish", &Stub::Finish, codec::to_proto(request));
}

std::vector<ModelStatus> GrpcClient::status() {
  const auto rep = impl_->call("Status", &Stub::Status, pb::StatusRequest{});
  return impl_->decode("Status", [&] { return codec::from_proto(rep); });
}

void GrpcClient::attach_snapshot(const std::string& path, const Manifest& manifest) {
  check_model(manifest.model);
  for (const auto& e : manifest.tensors) validate_name("tensor name", e.spec.name);
  impl_->call("AttachSnapshot", &Stub::AttachSnapshot, codec::attach_to_proto(path, manifest));
}

OffloadLease GrpcClient::begin_offload(WorkerId worker, const std::string& model, std::uint64_t version) {
  check_model(model);
  pb::BeginOffloadRequest req;
  req.set_worker(worker);
  req.set_model(model);
  req.set_version(version);
  const auto rep = impl_->call("BeginOffload", &Stub::BeginOffload, req);
  return impl_->decode("BeginOffload", [&] { return codec::from_proto(rep); });
}

void GrpcClient::end_offload(WorkerId worker, const std::string& model, std::uint64_t version) {
  check_model(model);
  pb::EndOffloadRequest req;
  req.set_worker(worker);
  req.set_model(model);
  req.set_version(version);
  impl_->call("EndOffload", &Stub::EndOffload, req);
}

}  // namespace tensorhub::coord
