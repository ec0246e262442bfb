#include <chrono>
#include <exception>
#include <type_traits>

#include "tensorhub/coord/metrics.hpp"

namespace tensorhub::coord {

template <class F>
auto MeteredClient::timed(const char* method, F&& f) -> decltype(f()) {
  const auto start = std::chrono::steady_clock::now();
  const auto seconds = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  try {
    if constexpr (std::is_void_v<decltype(f())>) {
      f();
      m_.record(method, seconds(), false);
    } else {
      auto r = f();
      m_.record(method, seconds(), false);
      return r;
    }
  } catch (...) {
    m_.record(method, seconds(), true);
    throw;
  }
}

WorkerId MeteredClient::register_worker(const WorkerInfo& i) {
  return timed("RegisterWorker", [&] { return inner_.register_worker(i); });
}
void MeteredClient::deregister_worker(WorkerId w) {
  timed("DeregisterWorker", [&] { inner_.deregister_worker(w); });
}
HeartbeatReply MeteredClient::heartbeat(WorkerId w) {
  return timed("Heartbeat", [&] { return inner_.heartbeat(w); });
}
PublishReply MeteredClient::publish(const PublishRequest& r) {
  return timed("Publish", [&] { return inner_.publish(r); });
}
std::uint32_t MeteredClient::unpublish(WorkerId w, const std::string& m, std::uint64_t v) {
  return timed("Unpublish", [&] { return inner_.unpublish(w, m, v); });
}
std::uint32_t MeteredClient::wait_drained(WorkerId w, const std::string& m, std::uint64_t v,
                                          std::chrono::milliseconds t) {
  return timed("WaitDrained", [&] { return inner_.wait_drained(w, m, v, t); });
}
void MeteredClient::retain(const std::string& m, std::uint64_t v) {
  timed("Retain", [&] { inner_.retain(m, v); });
}
void MeteredClient::release(const std::string& m, std::uint64_t v) {
  timed("Release", [&] { inner_.release(m, v); });
}
void MeteredClient::attach_snapshot(const std::string& p, const Manifest& m) {
  timed("AttachSnapshot", [&] { inner_.attach_snapshot(p, m); });
}
OffloadLease MeteredClient::begin_offload(WorkerId w, const std::string& m, std::uint64_t v) {
  return timed("BeginOffload", [&] { return inner_.begin_offload(w, m, v); });
}
void MeteredClient::end_offload(WorkerId w, const std::string& m, std::uint64_t v) {
  timed("EndOffload", [&] { inner_.end_offload(w, m, v); });
}
std::optional<std::uint64_t> MeteredClient::latest(const std::string& m) {
  return timed("Latest", [&] { return inner_.latest(m); });
}
std::optional<std::uint64_t> MeteredClient::wait_for(const std::string& m, std::optional<std::uint64_t> n,
                                                     std::chrono::milliseconds t) {
  return timed("WaitFor", [&] { return inner_.wait_for(m, n, t); });
}
ResolveReply MeteredClient::resolve(const ResolveRequest& r) {
  auto reply = timed("Resolve", [&] { return inner_.resolve(r); });
  m_.manifest_seen(*reply.manifest);
  return reply;
}
void MeteredClient::offer_relay(const RelayOffer& o) {
  timed("OfferRelay", [&] { inner_.offer_relay(o); });
}
AcquireReply MeteredClient::acquire(const AcquireRequest& r) {
  auto reply = timed("Acquire", [&] { return inner_.acquire(r); });
  m_.acquired(r, reply);
  return reply;
}
PlanReply MeteredClient::plan(const PlanRequest& r) {
  auto reply = timed("Plan", [&] { return inner_.plan(r); });
  m_.planned(r, reply);
  return reply;
}
void MeteredClient::complete(const CompleteRequest& r) {
  timed("Complete", [&] { inner_.complete(r); });
  m_.completed(r);
}
void MeteredClient::finish(const FinishRequest& r) {
  timed("Finish", [&] { inner_.finish(r); });
}
std::vector<ModelStatus> MeteredClient::status() {
  return timed("Status", [&] { return inner_.status(); });
}
std::vector<WorkerStatus> MeteredClient::workers() {
  return timed("Workers", [&] { return inner_.workers(); });
}

}  // namespace tensorhub::coord
