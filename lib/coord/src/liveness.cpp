#include "tensorhub/coord/liveness.hpp"

#include <algorithm>
#include <utility>

#include "tensorhub/core/error.hpp"

namespace tensorhub::coord {

Liveness::Liveness(std::chrono::milliseconds lease) : lease_(lease) {
  if (lease_.count() < 0) throw UserError("the worker lease must not be negative");
}

void Liveness::add(WorkerId worker, Clock::time_point now) { entries_[worker] = Entry{now, false, {}}; }

void Liveness::remove(WorkerId worker) { entries_.erase(worker); }

void Liveness::touch(WorkerId worker, Clock::time_point now) {
  const auto it = entries_.find(worker);
  if (it == entries_.end()) return;
  it->second.last_seen = std::max(it->second.last_seen, now);
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
  std::vector<std::pair<Clock::time_point, WorkerId>> out;
  if (lease_.count() == 0) return {};
  for (const auto& [id, e] : entries_) {
    if (now - e.last_seen > lease_) out.emplace_back(e.last_seen, id);
  }
  std::sort(out.begin(), out.end());
  std::vector<WorkerId> ids;
  ids.reserve(out.size());
  for (const auto& [t, id] : out) ids.push_back(id);
  return ids;
}

}  // namespace tensorhub::coord
