#include "tensorhub/coord/liveness.hpp"

#include <algorithm>
#include <utility>

#include "tensorhub/core/error.hpp"

namespace tensorhub::coord {

Liveness::Liveness(std::chrono::milliseconds lease) : lease_(lease) {
  if (lease_.count() < 0) throw UserError("the worker lease must not be negative");
}

void Liveness::add(WorkerId worker, Clock::time_point now) {
  remove(worker);
  entries_[worker] = Entry{now, false, {}};
  by_last_seen_.emplace(now, worker);
}

void Liveness::remove(WorkerId worker) {
  const auto it = entries_.find(worker);
  if (it == entries_.end()) return;
  by_last_seen_.erase({it->second.last_seen, worker});
  entries_.erase(it);
}

void Liveness::touch(WorkerId worker, Clock::time_point now) {
  const auto it = entries_.find(worker);
  if (it == entries_.end()) return;
  if (now > it->second.last_seen) {
    by_last_seen_.erase({it->second.last_seen, worker});
    it->second.last_seen = now;
    by_last_seen_.emplace(now, worker);
  }
  it->second.reported = false;
  it->second.report.clear();
}

void Liveness::report_failure(WorkerId worker, Clock::time_point, std::string why) {
  const auto it = entries_.find(worker);
  if (it == entries_.end()) return;
  it->second.reported = true;
  it->second.report = std::move(why);
}

std::uint64_t Liveness::silent_ms(WorkerId worker, Clock::time_point now) const {
  const auto it = entries_.find(worker);
  if (it == entries_.end() || now <= it->second.last_seen) return 0;
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(now - it->second.last_seen).count());
}

std::string Liveness::suspicion(WorkerId worker, Clock::time_point now) const {
  if (lease_.count() == 0) return {};
  const auto it = entries_.find(worker);
  if (it == entries_.end()) return {};
  if (it->second.reported) return it->second.report;
  const auto silent = silent_ms(worker, now);
  if (silent * 2 > static_cast<std::uint64_t>(lease_.count())) {
    return "silent for " + std::to_string(silent) + " ms (lease " + std::to_string(lease_.count()) + " ms)";
  }
  return {};
}

bool Liveness::suspect(WorkerId worker, Clock::time_point now) const { return !suspicion(worker, now).empty(); }

std::vector<WorkerId> Liveness::expired(Clock::time_point now) const {
  std::vector<WorkerId> ids;
  if (lease_.count() == 0) return ids;
  for (const auto& [seen, id] : by_last_seen_) {
    if (now - seen <= lease_) break;  // the rest were heard from later
    ids.push_back(id);
  }
  return ids;
}

}  // namespace tensorhub::coord
