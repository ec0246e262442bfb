#include "tensorhub/coord/coordinator.hpp"

#include <algorithm>
#include <random>
#include <utility>

#include "tensorhub/core/error.hpp"
#include "tensorhub/core/validate.hpp"
#include "vname.hpp"
#include "wan_seed.hpp"

namespace tensorhub::coord {

namespace {

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

}  // namespace

Coordinator::Coordinator(CoordinatorConfig config)
    : config_(std::move(config)), log_("coord"), liveness_(config_.lease), slots_(config_.slot_grace) {
  if (config_.max_readers_per_source == 0) throw UserError("max_readers_per_source must be at least 1");
  if (config_.slot_grace.count() < 0) throw UserError("slot_grace must not be negative");
  next_worker_ = (WorkerId{pick_incarnation(config_.incarnation)} << 32) | 1;
}

std::chrono::steady_clock::time_point Coordinator::now() const {
  return config_.clock ? config_.clock() : std::chrono::steady_clock::now();
}

const WorkerInfo& Coordinator::worker(WorkerId id) const {
  const auto it = workers_.find(id);
  if (it == workers_.end()) {
    throw UnknownWorker("worker " + std::to_string(id) +
                        " is not registered here (its lease expired, or another coordinator now serves the hub): "
                        "register again");
  }
  return it->second;
}

const WorkerInfo& Coordinator::alive(WorkerId id) {
  const auto& info = worker(id);
  liveness_.touch(id, now());
  return info;
}

VersionState* Coordinator::find_version(const std::string& model, std::uint64_t version) {
  const auto m = models_.find(model);
  if (m == models_.end()) return nullptr;
  const auto v = m->second.find(version);
  return v == m->second.end() ? nullptr : &v->second;
}

VersionState& Coordinator::version_or_throw(const std::string& model, std::uint64_t version) {
  validate_name("model name", model);
  const auto m = models_.find(model);
  if (m == models_.end()) throw NotFoundError("model '" + model + "' is unknown to the hub");
  const auto v = m->second.find(version);
  if (v == m->second.end()) {
    std::string known;
    for (const auto& [n, s] : m->second) known += (known.empty() ? "" : ", ") + std::to_string(n);
    throw NotFoundError(vname(model, version) +
                        " is not published (known versions: " + (known.empty() ? "none" : known) + ")");
  }
  return v->second;
}

WorkerId Coordinator::register_worker(const WorkerInfo& info) {
  if (info.endpoint.empty()) throw UserError("worker registration without an endpoint");
  std::lock_guard lock(mu_);
  reap();
  const WorkerId id = next_worker_++;
  workers_.emplace(id, info);
  liveness_.add(id, now());
  return id;
}

void Coordinator::deregister_worker(WorkerId id) {
  std::lock_guard lock(mu_);
  reap();
  worker(id);
  forget_worker(id, WorkerState::kLeft, "deregistered");
}

void Coordinator::retain(const std::string& model, std::uint64_t version) {
  std::lock_guard lock(mu_);
  reap();
  auto& v = version_or_throw(model, version);
  if (!v.committed()) throw UserError(vname(model, version) + " is not committed yet; retain it after publish");
  ++v.retained;
}

void Coordinator::release(const std::string& model, std::uint64_t version) {
  std::lock_guard lock(mu_);
  reap();
  auto& v = version_or_throw(model, version);
  if (v.retained == 0) throw UserError(vname(model, version) + " is not retained");
  --v.retained;
  drop_if_unused(model, version);  // e.g. a version only its snapshot still backed
  changed_.notify_all();
}

std::optional<std::uint64_t> Coordinator::latest_locked(const std::string& model) const {
  const auto m = models_.find(model);
  if (m == models_.end()) return std::nullopt;
  for (auto it = m->second.rbegin(); it != m->second.rend(); ++it) {
    if (it->second.readable()) return it->first;
  }
  return std::nullopt;
}

std::optional<std::uint64_t> Coordinator::latest(const std::string& model) {
  validate_name("model name", model);
  std::lock_guard lock(mu_);
  reap();
  return latest_locked(model);
}

std::optional<std::uint64_t> Coordinator::wait_for(const std::string& model, std::optional<std::uint64_t> newer_than,
                                                   std::chrono::milliseconds timeout) {
  validate_name("model name", model);
  std::unique_lock lock(mu_);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    reap();  // the latest version may lose its last holder while we wait
    const auto v = latest_locked(model);
    if (v && (!newer_than || *v > *newer_than)) return v;
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    changed_.wait_until(lock, std::min(deadline, std::chrono::steady_clock::now() + reap_tick()));
  }
}

void Coordinator::offer_relay(const RelayOffer& o) {
  std::lock_guard lock(mu_);
  reap();
  alive(o.reader);
  auto& v = version_or_throw(o.model, o.version);
  if (o.regions.size() != v.manifest().tensors.size()) throw UserError("relay offer: one region slot per tensor");
  if (Holder* h = v.find_holder(o.reader)) {
    if (h->origin && !h->withdrawn) {
      throw UserError(vname(o.model, o.version) + " is published by this worker; it cannot also relay it");
    }
    if (!h->origin && !h->withdrawn && !h->withdraw_deferred) {
      // The same reader pulls the version again (e.g. other tensors into other buffers): tensors
      // it had not offered yet get the new regions; an offered one keeps its region and chunks.
      for (std::size_t t = 0; t < o.regions.size(); ++t) {
        if (h->regions[t].empty()) h->regions[t] = o.regions[t];
      }
      return;
    }
    if (outstanding(v, *h) > 0) {
      throw UserError(vname(o.model, o.version) +
                      " is still held by this worker (withdrawn, reads not drained); wait_drained first");
    }
    v.holders().erase(o.reader);
  }
  Holder h;
  h.worker = o.reader;
  h.origin = false;
  h.depth = 1;
  h.regions = o.regions;
  h.have.assign(v.manifest().chunks.size(), 0);
  v.holders().emplace(o.reader, std::move(h));
}

std::vector<ModelStatus> Coordinator::status() {
  std::lock_guard lock(mu_);
  reap();
  std::vector<ModelStatus> out;
  for (const auto& [name, versions] : models_) {
    ModelStatus ms;
    ms.model = name;
    for (const auto& [n, v] : versions) {
      auto vs = v.status();
      for (auto& h : vs.holder_list) {
        const auto w = workers_.find(h.worker);
        if (w == workers_.end()) continue;
        h.host = w->second.host;
        h.rank = w->second.rank;
      }
      vs.wan_seeds = live_seeds(v, workers_);
      ms.versions.push_back(std::move(vs));
    }
    out.push_back(std::move(ms));
  }
  return out;
}

}  // namespace tensorhub::coord
