// Coordinator: construction, registration, retention, latest/wait_for and status.
#include "tensorhub/coord/coordinator.hpp"

#include <algorithm>
#include <utility>

#include "tensorhub/core/error.hpp"
#include "tensorhub/core/validate.hpp"
#include "vname.hpp"
#include "wan_seed.hpp"

namespace tensorhub::coord {

Coordinator::Coordinator(CoordinatorConfig config)
    : config_(std::move(config)),
      planner_(config_.planner ? config_.planner : std::make_shared<const DefaultPlanner>()),
      log_("coord"),
      workers_(config_.lease, config_.incarnation),
      slots_(config_.slot_grace) {
  if (config_.max_readers_per_source == 0) throw UserError("max_readers_per_source must be at least 1");
  if (config_.plan_fanout == 0) throw UserError("plan_fanout must be at least 1");
  if (config_.plan_rails == 0) throw UserError("plan_rails must be at least 1 (1: no rails)");
  if (config_.plan_rail_wait.count() < 0) throw UserError("plan_rail_wait must not be negative");
  if (config_.slot_grace.count() < 0) throw UserError("slot_grace must not be negative");
}

std::chrono::steady_clock::time_point Coordinator::now() const {
  return config_.clock ? config_.clock() : std::chrono::steady_clock::now();
}

const WorkerInfo& Coordinator::alive(WorkerId id) { return workers_.touch(id, now()); }

PlanView Coordinator::plan_view(const VersionState& v) const {
  const auto t = now();
  return PlanView{
      v,
      workers_.directory(),
      slots_,
      [this, t](WorkerId w) { return workers_.suspect(w, t); },
      t,
      [this](const WorkerInfo& w, std::uint32_t rail, std::uint32_t n) { return workers_.host_has_rail(w, rail, n); }};
}

WorkerId Coordinator::register_worker(const WorkerInfo& info) {
  if (info.endpoint.empty()) throw UserError("worker registration without an endpoint");
  std::lock_guard lock(mu_);
  reap();
  return workers_.add(info, now());
}

void Coordinator::deregister_worker(WorkerId id) {
  std::lock_guard lock(mu_);
  reap();
  workers_.get(id);
  forget_worker(id, WorkerState::kLeft, "deregistered");
}

void Coordinator::retain(const std::string& model, std::uint64_t version) {
  validate_name("model name", model);
  std::lock_guard lock(mu_);
  reap();
  auto& v = directory_.get(model, version);
  if (!v.committed()) throw UserError(vname(model, version) + " is not committed yet; retain it after publish");
  v.retain();
}

void Coordinator::release(const std::string& model, std::uint64_t version) {
  validate_name("model name", model);
  std::lock_guard lock(mu_);
  reap();
  directory_.get(model, version).release();
  directory_.drop_if_unused(model, version);  // e.g. a version only its snapshot still backed
  changed_.notify_all();
}

std::optional<std::uint64_t> Coordinator::latest(const std::string& model) {
  validate_name("model name", model);
  std::lock_guard lock(mu_);
  reap();
  return directory_.latest(model);
}

std::optional<std::uint64_t> Coordinator::wait_for(const std::string& model, std::optional<std::uint64_t> newer_than,
                                                   std::chrono::milliseconds timeout) {
  validate_name("model name", model);
  std::unique_lock lock(mu_);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    reap();  // the latest version may lose its last holder while we wait
    const auto v = directory_.latest(model);
    if (v && (!newer_than || *v > *newer_than)) return v;
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    changed_.wait_until(lock, std::min(deadline, std::chrono::steady_clock::now() + reap_tick()));
  }
}

std::vector<ModelStatus> Coordinator::status() {
  std::lock_guard lock(mu_);
  reap();
  std::vector<ModelStatus> out;
  const auto& workers = workers_.directory();
  for (const auto& [name, versions] : directory_.all()) {
    ModelStatus ms;
    ms.model = name;
    for (const auto& [n, v] : versions) {
      auto vs = v.status();
      for (auto& h : vs.holder_list) {
        const auto w = workers.find(h.worker);
        if (w == workers.end()) continue;
        h.host = w->second.host;
        h.rank = w->second.rank;
      }
      vs.wan_seeds = live_seeds(v, workers);
      ms.versions.push_back(std::move(vs));
    }
    out.push_back(std::move(ms));
  }
  return out;
}

}  // namespace tensorhub::coord
