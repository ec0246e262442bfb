#include "tensorhub/core/trace.hpp"

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <utility>

#include "tensorhub/core/error.hpp"

namespace tensorhub {
namespace {

std::int64_t micros(TraceRecorder::Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count();
}

nlohmann::json metadata(const char* what, int pid, std::uint32_t tid, const std::string& name) {
  return {{"ph", "M"}, {"name", what}, {"pid", pid}, {"tid", tid}, {"args", {{"name", name}}}};
}

}  // namespace

TraceRecorder::TraceRecorder(int pid, std::string process_name, std::size_t max_events)
    : pid_(pid), process_name_(std::move(process_name)), max_events_(max_events) {
  lanes_[kCallLane] = "calls (user thread)";
  lanes_[kHeartbeatLane] = "heartbeat";
}

void TraceRecorder::add(Event e) {
  std::lock_guard lock(mu_);
  if (events_.size() >= max_events_) {
    ++dropped_;
    return;
  }
  events_.push_back(std::move(e));
}

void TraceRecorder::span(std::string name, std::string cat, std::uint32_t lane, Clock::time_point start,
                         Clock::time_point end, std::vector<TraceArg> args) {
  const auto ts = micros(start);
  add(Event{std::move(name), std::move(cat), 'X', lane, ts, std::max<std::int64_t>(micros(end) - ts, 0),
            std::move(args)});
}

void TraceRecorder::instant(std::string name, std::string cat, std::uint32_t lane, Clock::time_point at,
                            std::vector<TraceArg> args) {
  add(Event{std::move(name), std::move(cat), 'i', lane, micros(at), 0, std::move(args)});
}

void TraceRecorder::name_lane(std::uint32_t lane, std::string name) {
  std::lock_guard lock(mu_);
  lanes_[lane] = std::move(name);
}

std::size_t TraceRecorder::events() const {
  std::lock_guard lock(mu_);
  return events_.size();
}

std::size_t TraceRecorder::dropped() const {
  std::lock_guard lock(mu_);
  return dropped_;
}

std::string TraceRecorder::json() const {
  std::lock_guard lock(mu_);
  nlohmann::json ev = nlohmann::json::array();
  ev.push_back(metadata("process_name", pid_, 0, process_name_));
  for (const auto& [lane, name] : lanes_) ev.push_back(metadata("thread_name", pid_, lane, name));
  for (const auto& e : events_) {
    nlohmann::json j{{"name", e.name}, {"cat", e.cat}, {"ph", std::string(1, e.phase)},
                     {"ts", e.ts_us},  {"pid", pid_},  {"tid", e.lane}};
    if (e.phase == 'X') j["dur"] = e.dur_us;
    if (e.phase == 'i') j["s"] = "t";
    nlohmann::json args = nlohmann::json::object();
    for (const auto& a : e.args) std::visit([&](const auto& v) { args[a.key] = v; }, a.value);
    j["args"] = std::move(args);
    ev.push_back(std::move(j));
  }
  nlohmann::json out{{"traceEvents", std::move(ev)},
                     {"displayTimeUnit", "ms"},
                     {"otherData", {{"producer", "tensorhub"}, {"dropped_events", dropped_}}}};
  return out.dump() + "\n";
}

void TraceRecorder::write(const std::string& path) const {
  const auto text = json();
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) throw UserError("cannot write the trace file " + path);
  f << text;
  f.flush();
  if (!f) throw UserError("error writing the trace file " + path);
}

std::string trace_file_for_rank(const std::string& path, int rank, int size) {
  if (size <= 1) return path;
  const std::string tag = ".rank" + std::to_string(rank);
  constexpr std::string_view kJson = ".json";
  if (path.size() > kJson.size() && path.ends_with(kJson))
    return path.substr(0, path.size() - kJson.size()) + tag + ".json";
  return path + tag;
}

std::string merge_traces(const std::vector<std::string>& jsons) {
  nlohmann::json ev = nlohmann::json::array();
  std::uint64_t dropped = 0;
  for (std::size_t i = 0; i < jsons.size(); ++i) {
    const auto j = nlohmann::json::parse(jsons[i], nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("traceEvents") || !j["traceEvents"].is_array()) {
      throw UserError("trace " + std::to_string(i) + " is not a trace-event JSON object");
    }
    for (const auto& e : j["traceEvents"]) ev.push_back(e);
    if (j.contains("otherData") && j["otherData"].is_object() && j["otherData"].contains("dropped_events") &&
        j["otherData"]["dropped_events"].is_number_unsigned()) {
      dropped += j["otherData"]["dropped_events"].get<std::uint64_t>();
    }
  }
  nlohmann::json out{{"traceEvents", std::move(ev)},
                     {"displayTimeUnit", "ms"},
                     {"otherData", {{"producer", "tensorhub"}, {"dropped_events", dropped}}}};
  return out.dump() + "\n";
}

}  // namespace tensorhub
