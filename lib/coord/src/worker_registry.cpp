#include "tensorhub/coord/worker_registry.hpp"

#include <random>
#include <utility>

#include "tensorhub/core/error.hpp"
#include "tensorhub/core/limits.hpp"
#include "tensorhub/core/validate.hpp"

namespace tensorhub::coord {
namespace {

constexpr std::size_t kMaxDeparted = limits::kMaxDepartedWorkers;

// A label of a registration (host, rack, dc, transport): at most kMaxHostNameBytes of UTF-8
// without control characters; may be empty.
void check_label(const char* what, const std::string& text) {
  if (text.size() > limits::kMaxHostNameBytes) {
    throw UserError(std::string("worker registration: ") + what + " is " + std::to_string(text.size()) +
                    " bytes long (at most " + std::to_string(limits::kMaxHostNameBytes) + ")");
  }
  if (!text.empty()) validate_name(std::string("worker registration: ") + what, text);
}

// Worker ids carry 20 bits of incarnation above a 32-bit counter: unique across coordinators
// with high probability, and below 2^53 (exact in JSON readers).
constexpr std::uint32_t kIncarnationMask = (1u << 20) - 1;

std::uint32_t pick_incarnation(std::uint32_t configured) {
  if (configured != 0) return configured & kIncarnationMask;
  std::random_device rd;
  std::uint32_t x = 0;
  while (x == 0) x = rd() & kIncarnationMask;
  return x;
}

std::uint64_t ms_since(std::chrono::steady_clock::time_point then, std::chrono::steady_clock::time_point now) {
  return now > then
             ? static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(now - then).count())
             : 0;
}

}  // namespace

WorkerRegistry::WorkerRegistry(std::chrono::milliseconds lease, std::uint32_t incarnation)
    : next_((WorkerId{pick_incarnation(incarnation)} << 32) | 1), liveness_(lease) {}

namespace {

std::string host_key(const WorkerInfo& w) { return w.dc + '\x1f' + w.rack + '\x1f' + w.host; }

}  // namespace

WorkerId WorkerRegistry::add(const WorkerInfo& info, Clock::time_point now) {
  if (info.endpoint.empty()) throw UserError("worker registration without an endpoint");
  if (info.endpoint.size() > limits::kMaxEndpointBytes) {
    throw UserError("worker registration: endpoint is " + std::to_string(info.endpoint.size()) +
                    " bytes long (at most " + std::to_string(limits::kMaxEndpointBytes) + ")");
  }
  check_label("host name", info.host);
  check_label("rack", info.rack);
  check_label("datacenter", info.dc);
  check_label("transport", info.transport);
  const WorkerId id = next_++;
  workers_.emplace(id, info);
  if (info.gpu >= 0) ++gpus_[host_key(info)][info.gpu];
  liveness_.add(id, now);
  return id;
}

bool WorkerRegistry::host_has_rail(const WorkerInfo& where, std::uint32_t rail, std::uint32_t n) const {
  const auto it = gpus_.find(host_key(where));
  if (it == gpus_.end() || n == 0) return false;
  for (const auto& [gpu, count] : it->second) {
    if (static_cast<std::uint32_t>(gpu) % n == rail) return true;
  }
  return false;
}

const WorkerInfo& WorkerRegistry::get(WorkerId id) const {
  const auto it = workers_.find(id);
  if (it == workers_.end()) {
    throw UnknownWorker("worker " + std::to_string(id) +
                        " is not registered here (its lease expired, or another coordinator now serves the hub): "
                        "register again");
  }
  return it->second;
}

const WorkerInfo& WorkerRegistry::touch(WorkerId id, Clock::time_point now) {
  const auto& info = get(id);
  liveness_.touch(id, now);
  return info;
}

std::vector<std::pair<WorkerId, std::string>> WorkerRegistry::expired(Clock::time_point now) const {
  std::vector<std::pair<WorkerId, std::string>> out;
  for (const auto id : liveness_.expired(now)) {
    out.emplace_back(id, "lease expired: silent for " + std::to_string(liveness_.silent_ms(id, now)) + " ms (lease " +
                             std::to_string(liveness_.lease().count()) + " ms)");
  }
  return out;
}

void WorkerRegistry::remove(WorkerId id, WorkerState state, std::string reason, Clock::time_point now) {
  liveness_.remove(id);
  const auto w = workers_.find(id);
  if (w == workers_.end()) return;
  WorkerStatus s;
  s.worker = id;
  s.info = w->second;
  s.state = state;
  s.reason = std::move(reason);
  departed_.push_back(Departed{std::move(s), now});
  while (departed_.size() > kMaxDeparted) departed_.pop_front();
  if (w->second.gpu >= 0) {
    const auto h = gpus_.find(host_key(w->second));
    if (h != gpus_.end()) {
      const auto g = h->second.find(w->second.gpu);
      if (g != h->second.end() && --g->second == 0) h->second.erase(g);
      if (h->second.empty()) gpus_.erase(h);
    }
  }
  workers_.erase(w);
}

std::vector<WorkerStatus> WorkerRegistry::statuses(Clock::time_point now) const {
  std::vector<WorkerStatus> out;
  for (const auto& [id, info] : workers_) {
    WorkerStatus s;
    s.worker = id;
    s.info = info;
    s.reason = liveness_.suspicion(id, now);
    s.state = s.reason.empty() ? WorkerState::kAlive : WorkerState::kSuspect;
    s.silent_ms = liveness_.silent_ms(id, now);
    out.push_back(std::move(s));
  }
  for (auto it = departed_.rbegin(); it != departed_.rend(); ++it) {
    auto s = it->status;
    s.silent_ms = ms_since(it->when, now);
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace tensorhub::coord
