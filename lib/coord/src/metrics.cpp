// CallMetrics and the text exposition (https://prometheus.io/docs/instrumenting/exposition_formats/).
#include "tensorhub/coord/metrics.hpp"

#include <cmath>
#include <cstdio>
#include <sstream>

namespace tensorhub::coord {
namespace {

// A label value with \, " and newlines escaped.
std::string esc(const std::string& s) {
  std::string out;
  for (const char c : s) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

std::string num(double v) {
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

class Writer {
 public:
  void family(const char* name, const char* type, const char* help) {
    out_ << "# HELP " << name << ' ' << help << "\n# TYPE " << name << ' ' << type << '\n';
  }
  void sample(const std::string& name, const std::string& labels, double v) {
    out_ << name;
    if (!labels.empty()) out_ << '{' << labels << '}';
    out_ << ' ' << num(v) << '\n';
  }
  void sample(const std::string& name, const std::string& labels, std::uint64_t v) {
    out_ << name;
    if (!labels.empty()) out_ << '{' << labels << '}';
    out_ << ' ' << v << '\n';
  }
  std::string str() const { return out_.str(); }

 private:
  std::ostringstream out_;
};

std::string mv(const std::string& model, std::uint64_t version) {
  return "model=\"" + esc(model) + "\",version=\"" + std::to_string(version) + "\"";
}

const char* kind(bool origin) { return origin ? "publisher" : "relay"; }

}  // namespace

void CallMetrics::record(const std::string& method, double seconds, bool error) {
  std::lock_guard lock(mu_);
  auto& c = calls_[method];
  ++c.count;
  c.errors += error ? 1 : 0;
  c.sum += seconds;
  for (std::size_t i = 0; i < kBuckets.size(); ++i) {
    if (seconds <= kBuckets[i]) {
      ++c.buckets[i];
      break;
    }
  }
}

CallMetrics::VersionFacts& CallMetrics::facts(const std::string& model, std::uint64_t version) {
  Key k{model, version};
  auto it = versions_.find(k);
  if (it != versions_.end()) return it->second;
  if (order_.size() >= kMaxVersions) {
    versions_.erase(order_.front());
    order_.pop_front();
  }
  order_.push_back(k);
  return versions_[k];
}

void CallMetrics::manifest_seen(const Manifest& m) {
  std::lock_guard lock(mu_);
  auto& f = facts(m.model, m.version);
  if (f.chunk_bytes.size() == m.chunks.size()) return;
  f.chunk_bytes.clear();
  for (const auto& c : m.chunks) f.chunk_bytes.push_back(c.length);
}

void CallMetrics::acquired(const AcquireRequest& req, const AcquireReply& reply) {
  std::lock_guard lock(mu_);
  auto& f = facts(req.model, req.version);
  for (const auto& a : reply.assignments) {
    ++assigned_[a.origin ? 1 : 0];
    f.origin[a.holder] = a.origin;
  }
  unavailable_ += reply.unavailable.size();
  const auto answered = reply.assignments.size() + reply.unavailable.size();
  // The planner answers at most max_assign chunks; the rest of those asked wait their turn.
  const auto asked = std::min<std::size_t>(req.chunks.size(), req.max_assign);
  if (asked > answered) wait_answers_ += asked - answered;
}

void CallMetrics::completed(const CompleteRequest& req) {
  std::lock_guard lock(mu_);
  auto& f = facts(req.model, req.version);
  for (const auto& r : req.results) {
    if (!r.ok) {
      ++failed_reads_;
      continue;
    }
    const auto o = f.origin.find(r.holder);
    const int k = o != f.origin.end() && o->second ? 1 : 0;
    ++read_chunks_[k];
    if (r.chunk < f.chunk_bytes.size()) read_bytes_[k] += f.chunk_bytes[r.chunk];
  }
}

void CallMetrics::planned(const PlanRequest& req, const PlanReply& reply) {
  std::lock_guard lock(mu_);
  auto& f = facts(req.model, req.version);
  for (const auto& step : reply.steps) {
    if (step.source >= reply.sources.size()) continue;
    const int k = reply.sources[step.source].origin ? 1 : 0;
    read_chunks_[k] += step.range.count;
    for (std::uint64_t c = step.range.first; c < std::uint64_t{step.range.first} + step.range.count; ++c) {
      if (c < f.chunk_bytes.size()) read_bytes_[k] += f.chunk_bytes[c];
    }
  }
}

std::string CallMetrics::render() const {
  std::lock_guard lock(mu_);
  Writer w;
  w.family("tensorhub_rpc_calls_total", "counter", "Coordinator calls served, by method.");
  for (const auto& [m, c] : calls_) w.sample("tensorhub_rpc_calls_total", "method=\"" + m + "\"", c.count);
  w.family("tensorhub_rpc_errors_total", "counter", "Coordinator calls that ended in an error, by method.");
  for (const auto& [m, c] : calls_) w.sample("tensorhub_rpc_errors_total", "method=\"" + m + "\"", c.errors);
  w.family("tensorhub_rpc_duration_seconds", "histogram", "Time the coordinator spent in a call, by method.");
  for (const auto& [m, c] : calls_) {
    std::uint64_t cum = 0;
    for (std::size_t i = 0; i < kBuckets.size(); ++i) {
      cum += c.buckets[i];
      w.sample("tensorhub_rpc_duration_seconds_bucket", "method=\"" + m + "\",le=\"" + num(kBuckets[i]) + "\"", cum);
    }
    w.sample("tensorhub_rpc_duration_seconds_bucket", "method=\"" + m + "\",le=\"+Inf\"", c.count);
    w.sample("tensorhub_rpc_duration_seconds_sum", "method=\"" + m + "\"", c.sum);
    w.sample("tensorhub_rpc_duration_seconds_count", "method=\"" + m + "\"", c.count);
  }
  w.family("tensorhub_chunks_assigned_total", "counter", "Chunk reads the planner assigned, by holder kind.");
  for (int k = 0; k < 2; ++k)
    w.sample("tensorhub_chunks_assigned_total", std::string("source=\"") + kind(k) + "\"", assigned_[k]);
  w.family("tensorhub_chunks_read_total", "counter", "Chunk reads readers reported done and verified, by holder kind.");
  for (int k = 0; k < 2; ++k)
    w.sample("tensorhub_chunks_read_total", std::string("source=\"") + kind(k) + "\"", read_chunks_[k]);
  w.family("tensorhub_bytes_served_total", "counter",
           "Bytes readers reported read (acquire mode) or were planned to read (plan mode) from publishers "
           "and relays (snapshot files are read without the coordinator).");
  for (int k = 0; k < 2; ++k)
    w.sample("tensorhub_bytes_served_total", std::string("source=\"") + kind(k) + "\"", read_bytes_[k]);
  w.family("tensorhub_reads_failed_total", "counter", "Chunk reads that failed and were planned again.");
  w.sample("tensorhub_reads_failed_total", "", failed_reads_);
  w.family("tensorhub_plan_wait_total", "counter", "Chunks the planner told a reader to wait for (no free source).");
  w.sample("tensorhub_plan_wait_total", "", wait_answers_);
  w.family("tensorhub_plan_unavailable_total", "counter", "Chunks the planner found no live holder for.");
  w.sample("tensorhub_plan_unavailable_total", "", unavailable_);
  return w.str();
}

std::string render_metrics(Client& coordinator, const CallMetrics* calls) {
  const auto models = coordinator.status();
  const auto workers = coordinator.workers();
  Writer w;
  w.family("tensorhub_up", "gauge", "1 while the coordinator answers.");
  w.sample("tensorhub_up", "", std::uint64_t{1});
  w.family("tensorhub_models", "gauge", "Models in the directory.");
  w.sample("tensorhub_models", "", static_cast<std::uint64_t>(models.size()));
  w.family("tensorhub_latest_version", "gauge", "Newest readable version of each model.");
  for (const auto& m : models) {
    std::uint64_t latest = 0;
    bool any = false;
    for (const auto& v : m.versions) {
      if (v.readable && (!any || v.version > latest)) latest = v.version, any = true;
    }
    if (any) w.sample("tensorhub_latest_version", "model=\"" + esc(m.model) + "\"", latest);
  }
  struct Gauge {
    const char* name;
    const char* help;
    std::uint64_t (*get)(const VersionStatus&);
  };
  const Gauge gauges[] = {
      {"tensorhub_version_committed", "1 once every shard of the version is published.",
       [](const VersionStatus& v) -> std::uint64_t { return v.committed; }},
      {"tensorhub_version_readable", "1 while the version is readable (live holders or its snapshot file).",
       [](const VersionStatus& v) -> std::uint64_t { return v.readable; }},
      {"tensorhub_version_holders", "Live holders of the version (publishers and relays).",
       [](const VersionStatus& v) -> std::uint64_t { return v.holders; }},
      {"tensorhub_version_publishers", "Live publishers (origin holders) of the version.",
       [](const VersionStatus& v) -> std::uint64_t { return v.origin_holders; }},
      {"tensorhub_version_pins", "Pins on the version: reads in flight and reading groups' pulls.",
       [](const VersionStatus& v) -> std::uint64_t { return v.pins; }},
      {"tensorhub_version_retained", "Retain count of the version.",
       [](const VersionStatus& v) -> std::uint64_t { return v.retained; }},
      {"tensorhub_version_bytes", "Size of the version.",
       [](const VersionStatus& v) -> std::uint64_t { return v.bytes; }},
      {"tensorhub_version_snapshot", "1 when a snapshot file backs the version.",
       [](const VersionStatus& v) -> std::uint64_t { return !v.snapshot.empty(); }},
      {"tensorhub_version_readers", "Relay holders of the version (readers that pulled it and serve it).",
       [](const VersionStatus& v) -> std::uint64_t { return v.holders - v.origin_holders; }},
  };
  for (const auto& g : gauges) {
    w.family(g.name, "gauge", g.help);
    for (const auto& m : models) {
      for (const auto& v : m.versions) w.sample(g.name, mv(m.model, v.version), g.get(v));
    }
  }
  w.family("tensorhub_holder_reads_in_flight", "gauge", "Reads in flight from each live holder.");
  for (const auto& m : models) {
    for (const auto& v : m.versions) {
      for (const auto& h : v.holder_list) {
        if (h.withdrawn) continue;
        w.sample(
            "tensorhub_holder_reads_in_flight",
            mv(m.model, v.version) + ",worker=\"" + std::to_string(h.worker) + "\",kind=\"" + kind(h.origin) + "\"",
            static_cast<std::uint64_t>(h.pins));
      }
    }
  }
  static const char* const kStates[] = {"alive", "suspect", "dead", "left"};
  std::uint64_t by_state[4] = {0, 0, 0, 0};
  for (const auto& ws : workers) ++by_state[static_cast<int>(ws.state) & 3];
  w.family("tensorhub_workers", "gauge", "Workers by state (dead and left: those that went recently).");
  for (int s = 0; s < 4; ++s) w.sample("tensorhub_workers", std::string("state=\"") + kStates[s] + "\"", by_state[s]);
  auto text = w.str();
  if (calls) text += calls->render();
  return text;
}

}  // namespace tensorhub::coord
