#include "tracing_client.hpp"

#include <exception>

namespace tensorhub {
namespace {

using I = std::int64_t;

std::vector<TraceArg> mv(const std::string& model, std::uint64_t version) {
  return {{"model", model}, {"version", static_cast<I>(version)}};
}

}  // namespace

template <class F>
auto TracingClient::traced(const char* name, const char* cat, std::vector<TraceArg> args, F&& f) -> decltype(f()) {
  const auto lane = std::string_view(name) == "heartbeat" ? TraceRecorder::kHeartbeatLane : TraceRecorder::kCallLane;
  const auto start = TraceRecorder::now();
  try {
    if constexpr (std::is_void_v<decltype(f())>) {
      f();
      trace_.span(name, cat, lane, start, TraceRecorder::now(), std::move(args));
    } else {
      auto r = f();
      trace_.span(name, cat, lane, start, TraceRecorder::now(), std::move(args));
      return r;
    }
  } catch (const std::exception& e) {
    args.push_back({"error", std::string(e.what())});
    trace_.span(name, cat, lane, start, TraceRecorder::now(), std::move(args));
    throw;
  }
}

coord::WorkerId TracingClient::register_worker(const coord::WorkerInfo& i) {
  return traced("register", "control", {{"host", i.host}}, [&] { return inner_.register_worker(i); });
}
void TracingClient::deregister_worker(coord::WorkerId w) {
  traced("deregister", "control", {}, [&] { inner_.deregister_worker(w); });
}
coord::HeartbeatReply TracingClient::heartbeat(coord::WorkerId w) {
  return traced("heartbeat", "control", {}, [&] { return inner_.heartbeat(w); });
}
coord::PublishReply TracingClient::publish(const coord::PublishRequest& r) {
  auto args = mv(r.model, r.version);
  args.push_back({"shard", static_cast<I>(r.group.rank)});
  return traced("publish", "control", std::move(args), [&] { return inner_.publish(r); });
}
std::uint32_t TracingClient::unpublish(coord::WorkerId w, const std::string& m, std::uint64_t v) {
  return traced("unpublish", "control", mv(m, v), [&] { return inner_.unpublish(w, m, v); });
}
std::uint32_t TracingClient::wait_drained(coord::WorkerId w, const std::string& m, std::uint64_t v,
                                          std::chrono::milliseconds t) {
  return traced("wait for readers to drain", "wait", mv(m, v), [&] { return inner_.wait_drained(w, m, v, t); });
}
void TracingClient::retain(const std::string& m, std::uint64_t v) {
  traced("retain", "control", mv(m, v), [&] { inner_.retain(m, v); });
}
void TracingClient::release(const std::string& m, std::uint64_t v) {
  traced("release", "control", mv(m, v), [&] { inner_.release(m, v); });
}
void TracingClient::attach_snapshot(const std::string& p, const Manifest& m) {
  traced("attach_snapshot", "control", mv(m.model, m.version), [&] { inner_.attach_snapshot(p, m); });
}
coord::OffloadLease TracingClient::begin_offload(coord::WorkerId w, const std::string& m, std::uint64_t v) {
  return traced("begin_offload", "control", mv(m, v), [&] { return inner_.begin_offload(w, m, v); });
}
void TracingClient::end_offload(coord::WorkerId w, const std::string& m, std::uint64_t v) {
  traced("end_offload", "control", mv(m, v), [&] { inner_.end_offload(w, m, v); });
}
std::optional<std::uint64_t> TracingClient::latest(const std::string& m) {
  return traced("latest", "control", {{"model", m}}, [&] { return inner_.latest(m); });
}
std::optional<std::uint64_t> TracingClient::wait_for(const std::string& m, std::optional<std::uint64_t> n,
                                                     std::chrono::milliseconds t) {
  std::vector<TraceArg> args{{"model", m}};
  if (n) args.push_back({"newer_than", static_cast<I>(*n)});
  return traced("wait for a version", "wait", std::move(args), [&] { return inner_.wait_for(m, n, t); });
}
coord::ResolveReply TracingClient::resolve(const coord::ResolveRequest& r) {
  std::vector<TraceArg> args{{"model", r.model}, {"group", r.group.name}};
  if (r.version) args.push_back({"version", static_cast<I>(*r.version)});
  return traced("resolve", "control", std::move(args), [&] { return inner_.resolve(r); });
}
void TracingClient::offer_relay(const coord::RelayOffer& o) {
  traced("offer_relay", "control", mv(o.model, o.version), [&] { inner_.offer_relay(o); });
}
coord::AcquireReply TracingClient::acquire(const coord::AcquireRequest& r) {
  const auto start = TraceRecorder::now();
  auto reply = inner_.acquire(r);  // errors: traced as the pull's failure by the caller
  trace_.span("acquire", "control", TraceRecorder::kCallLane, start, TraceRecorder::now(),
              {{"model", r.model},
               {"version", static_cast<I>(r.version)},
               {"asked", static_cast<I>(r.chunks.size())},
               {"assigned", static_cast<I>(reply.assignments.size())},
               {"unavailable", static_cast<I>(reply.unavailable.size())}});
  return reply;
}
coord::PlanReply TracingClient::plan(const coord::PlanRequest& r) {
  const auto start = TraceRecorder::now();
  auto reply = inner_.plan(r);  // errors (PlanUnsupported too): the caller's
  trace_.span("plan", "control", TraceRecorder::kCallLane, start, TraceRecorder::now(),
              {{"model", r.model},
               {"version", static_cast<I>(r.version)},
               {"runs_asked", static_cast<I>(r.chunks.size())},
               {"excluded", static_cast<I>(r.exclude.size())},
               {"sources", static_cast<I>(reply.sources.size())},
               {"steps", static_cast<I>(reply.steps.size())},
               {"waiting", static_cast<I>(reply.waiting.size())},
               {"unavailable", static_cast<I>(reply.unavailable.size())}});
  return reply;
}
void TracingClient::complete(const coord::CompleteRequest& r) {
  auto args = mv(r.model, r.version);
  args.push_back({"results", static_cast<I>(r.results.size())});
  args.push_back({"now_relayed", static_cast<I>(r.now_held.size())});
  args.push_back({"held_runs", static_cast<I>(r.held_ranges.size())});
  args.push_back({"released", static_cast<I>(r.release_sources.size())});
  traced("complete", "control", std::move(args), [&] { inner_.complete(r); });
}
void TracingClient::finish(const coord::FinishRequest& r) {
  traced("finish", "control", mv(r.model, r.version), [&] { inner_.finish(r); });
}
std::vector<coord::ModelStatus> TracingClient::status() {
  return traced("status", "control", {}, [&] { return inner_.status(); });
}
std::vector<coord::WorkerStatus> TracingClient::workers() {
  return traced("workers", "control", {}, [&] { return inner_.workers(); });
}

}  // namespace tensorhub
