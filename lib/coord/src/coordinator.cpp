#include "tensorhub/coord/coordinator.hpp"

#include <algorithm>
#include <random>
#include <utility>

#include "tensorhub/core/error.hpp"
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

VersionState& Coordinator::version_or_throw(const std::string& model, std::uint64_t version) {
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
  // Reading groups it resolved and did not finish are finished on its behalf.
  std::vector<GroupKey> groups;
  for (const auto& [key, g] : group_reads_) {
    if (g.active.count(id)) groups.push_back(key);
  }
  for (const auto& key : groups) finish_group_read(key, id);
  // A clean leave unpublishes first; whatever is left is withdrawn so no new reads go there.
  for (auto& [model, versions] : models_) {
    for (auto& [n, v] : versions) {
      v.drop_pending(id);
      if (auto* h = v.find_holder(id)) h->withdrawn = true;
      if (v.offload_lease == id) v.offload_lease = 0;
      v.still_wanted.erase(id);
    }
  }
  slots_.forget_worker(id);
  liveness_.remove(id);
  remember_departed(id, WorkerState::kLeft, "deregistered");
  workers_.erase(id);
  changed_.notify_all();
}

PublishReply Coordinator::publish(const PublishRequest& r) {
  if (r.model.empty()) throw UserError("publish with an empty model name");
  if (r.group.size == 0) throw UserError("publish with a group of size 0");
  std::lock_guard lock(mu_);
  reap();
  alive(r.worker);
  auto& versions = models_[r.model];
  auto it = versions.find(r.version);
  bool fresh = false;
  if (it == versions.end()) {
    it = versions.emplace(r.version, VersionState(r.model, r.version, r.group.name, r.group.size, r.chunk_bytes)).first;
    fresh = true;
  }
  try {
    const bool committed = it->second.add_shard(r);
    if (committed) {
      log_.info("committed " + vname(r.model, r.version) + " (" + std::to_string(r.group.size) + " shards)");
      changed_.notify_all();
    }
    return PublishReply{committed};
  } catch (...) {
    if (fresh) versions.erase(it);
    if (versions.empty()) models_.erase(r.model);
    throw;
  }
}

std::uint32_t Coordinator::outstanding(const VersionState& v, const Holder& h) const {
  // Origins also wait for reading groups that resolved this version and have not finished:
  // those groups were promised the version.
  return h.pins + (h.origin ? v.group_pins : 0);
}

std::uint32_t Coordinator::unpublish(WorkerId w, const std::string& model, std::uint64_t version) {
  std::lock_guard lock(mu_);
  reap();
  alive(w);
  auto& v = version_or_throw(model, version);
  if (v.drop_pending(w)) {
    if (!v.committed() && !v.has_pending()) {
      models_[model].erase(version);
      if (models_[model].empty()) models_.erase(model);
    }
    changed_.notify_all();
    return 0;
  }
  Holder* h = v.find_holder(w);
  if (h == nullptr) throw NotFoundError(vname(model, version) + " is not published by this worker");
  if (!h->withdrawn && v.retained > 0 && v.snapshot.empty() && v.sole_holder_of_some_chunk(w)) {
    throw OffloadRequired(vname(model, version) +
                          " is retained and this worker is the last holder of some of its chunks: it must be "
                          "offloaded to a snapshot before this reference goes (or released first)");
  }
  if (!h->withdrawn) {
    h->withdrawn = true;
    h->withdrawn_ticket = ++ticket_;
  }
  changed_.notify_all();
  return outstanding(v, *h);
}

void Coordinator::forget_if_drained(const std::string& model, std::uint64_t version, WorkerId w) {
  auto m = models_.find(model);
  if (m == models_.end()) return;
  auto vit = m->second.find(version);
  if (vit == m->second.end()) return;
  auto& v = vit->second;
  Holder* h = v.find_holder(w);
  if (h == nullptr || !h->withdrawn || outstanding(v, *h) > 0) return;
  v.holders().erase(w);
  drop_if_unused(model, version);
}

void Coordinator::drop_if_unused(const std::string& model, std::uint64_t version) {
  auto m = models_.find(model);
  if (m == models_.end()) return;
  auto vit = m->second.find(version);
  if (vit == m->second.end()) return;
  const auto& v = vit->second;
  if (v.holders().empty() && v.retained == 0 && v.group_pins == 0 && !v.has_pending()) {
    if (!v.snapshot.empty()) log_.info("dropped " + vname(model, version) + " (its snapshot " + v.snapshot + " stays)");
    m->second.erase(vit);
  }
  if (m->second.empty()) models_.erase(m);
}

std::uint32_t Coordinator::wait_drained(WorkerId w, const std::string& model, std::uint64_t version,
                                        std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    reap();  // a reader that died holding pins releases them here
    alive(w);
    const auto m = models_.find(model);
    if (m == models_.end()) return 0;
    const auto vit = m->second.find(version);
    if (vit == m->second.end()) return 0;
    const Holder* h = vit->second.find_holder(w);
    if (h == nullptr) return 0;
    if (!h->withdrawn) throw UserError("wait_drained on " + vname(model, version) + " before unpublish");
    const auto left = outstanding(vit->second, *h);
    if (left == 0) {
      forget_if_drained(model, version, w);
      changed_.notify_all();
      return 0;
    }
    if (std::chrono::steady_clock::now() >= deadline) return left;
    changed_.wait_until(lock, std::min(deadline, std::chrono::steady_clock::now() + reap_tick()));
  }
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
  std::lock_guard lock(mu_);
  reap();
  return latest_locked(model);
}

std::optional<std::uint64_t> Coordinator::wait_for(const std::string& model, std::optional<std::uint64_t> newer_than,
                                                   std::chrono::milliseconds timeout) {
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

ResolveReply Coordinator::resolve(const ResolveRequest& r) {
  if (r.group.size == 0 || r.group.rank >= r.group.size) throw UserError("resolve: bad reading group");
  std::lock_guard lock(mu_);
  reap();
  alive(r.reader);
  const GroupKey key{r.model, r.group.name, r.seq};
  auto g = group_reads_.find(key);
  if (g != group_reads_.end()) {
    if (r.version && *r.version != g->second.version) {
      throw UserError("reading group '" + r.group.name + "' pull #" + std::to_string(r.seq) +
                      ": this rank asked for v" + std::to_string(*r.version) + " but the group already resolved v" +
                      std::to_string(g->second.version));
    }
    auto& gv = version_or_throw(r.model, g->second.version);
    gv.reader_tickets[r.reader] = g->second.ticket;
    g->second.active.insert(r.reader);
    return ResolveReply{gv.manifest(), gv.snapshot};
  }
  std::uint64_t chosen = 0;
  if (r.version) {
    auto& v = version_or_throw(r.model, *r.version);
    if (!v.committed()) throw NotFoundError(vname(r.model, *r.version) + " is not committed yet (shards missing)");
    if (!v.readable()) throw NotFoundError(vname(r.model, *r.version) + " has no live holder for some chunks");
    chosen = *r.version;
  } else {
    const auto l = latest_locked(r.model);
    if (!l) {
      if (!models_.count(r.model)) throw NotFoundError("model '" + r.model + "' is unknown to the hub");
      throw NotFoundError("model '" + r.model + "' has no readable version");
    }
    chosen = *l;
  }
  auto& v = version_or_throw(r.model, chosen);
  v.group_pins += r.group.size;
  const auto ticket = ++ticket_;
  v.reader_tickets[r.reader] = ticket;
  group_reads_.emplace(key, GroupRead{chosen, ticket, r.group.size, {r.reader}});
  return ResolveReply{v.manifest(), v.snapshot};
}

void Coordinator::offer_relay(const RelayOffer& o) {
  std::lock_guard lock(mu_);
  reap();
  alive(o.reader);
  auto& v = version_or_throw(o.model, o.version);
  if (o.regions.size() != v.manifest().tensors.size()) throw UserError("relay offer: one region slot per tensor");
  if (Holder* h = v.find_holder(o.reader)) {
    if (!h->withdrawn || outstanding(v, *h) > 0) {
      throw UserError(vname(o.model, o.version) + " is already held by this worker; unpublish it first");
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

void Coordinator::finish(const FinishRequest& r) {
  std::lock_guard lock(mu_);
  reap();
  alive(r.reader);
  const GroupKey key{r.model, r.group.name, r.seq};
  const auto g = group_reads_.find(key);
  if (g == group_reads_.end()) throw ContractViolation("finish() without resolve() for group '" + r.group.name + "'");
  if (!g->second.active.count(r.reader)) {
    throw ContractViolation("finish() by a rank that did not resolve group '" + r.group.name + "' pull #" +
                            std::to_string(r.seq));
  }
  finish_group_read(key, r.reader);
}

void Coordinator::finish_group_read(const GroupKey& key, WorkerId reader) {
  auto g = group_reads_.find(key);
  const auto& model = std::get<0>(key);
  g->second.active.erase(reader);
  auto m = models_.find(model);
  if (m != models_.end()) {
    auto vit = m->second.find(g->second.version);
    if (vit != m->second.end()) {
      vit->second.reader_tickets.erase(reader);
      vit->second.still_wanted.erase(reader);
    }
    if (vit != m->second.end() && vit->second.group_pins > 0) {
      --vit->second.group_pins;
      drop_if_unused(model, g->second.version);
    }
  }
  if (--g->second.finishes_left == 0) group_reads_.erase(g);
  for (const auto holder : slots_.idle_slots_of(reader)) slots_.release_if_idle(holder, reader);
  changed_.notify_all();
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
