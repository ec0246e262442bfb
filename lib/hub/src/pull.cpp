// Puller: resolve one version for the reading group, check the destinations against its
// manifest, copy what this rank holds itself, offer the rest as relay sources, run the chunk
// engine, report done. Three phases (puller.hpp): prepare and finish under the API mutex,
// transfer without it.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <optional>
#include <set>
#include <utility>

#include "box_destinations.hpp"
#include "own_copy.hpp"
#include "puller.hpp"
#include "tensorhub/core/checksum.hpp"
#include "tensorhub/core/shard_hash.hpp"
#include "tensorhub/core/validate.hpp"
#include "tensorhub/device/device.hpp"

namespace tensorhub {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// The destinations of `into`: whole tensors (matched by name; a box destination that is exactly
// one published tensor too, as that tensor) and box destinations (box_destinations.hpp).
struct Matched {
  std::vector<Tensor> tensors;  // whole tensors, as the manifest names them
  std::vector<transfer::Destination> dests;
  std::vector<transfer::Destination> boxes;
};

// The destination offset of published tensor `d.tensor` (of `bytes` bytes) when box destination
// `d` holds all of it in one contiguous segment.
std::optional<std::uint64_t> whole_run(const transfer::Destination& d, std::uint64_t bytes) {
  if (d.runs.size() != 1) return std::nullopt;
  const auto& r = d.runs.front();
  if (r.src != 0 || r.length != bytes || r.count != 1) return std::nullopt;
  return r.dst;
}

Matched match_destinations(const Manifest& m, std::span<const Tensor> into, HubDevice& device) {
  const std::string what = vname(m.model, m.version);
  Matched out;
  std::set<std::string> seen;
  for (const auto& t : into) {
    if (!seen.insert(t.spec.name).second) throw UserError("pull: tensor '" + t.spec.name + "' given twice");
    if (t.memory == MemoryKind::kCuda) device.check_tensor(t, "pull");
    if (auto boxes = box_destinations(m, t)) {
      if (boxes->size() == 1 && boxes->front().runs.empty()) {
        const auto& d = boxes->front();
        out.tensors.push_back(Tensor{m.tensors[d.tensor].spec, t.data, t.bytes, t.memory});
        out.dests.push_back(d);
        continue;
      }
      out.boxes.insert(out.boxes.end(), boxes->begin(), boxes->end());
      continue;
    }
    const auto idx = m.find(t.spec.name);
    if (!idx) throw NotFoundError("pull: tensor '" + t.spec.name + "' is not in " + what);
    const auto& spec = m.tensors[*idx].spec;
    if (spec.dtype != t.spec.dtype || spec.shape != t.spec.shape) {
      throw UserError("pull: tensor '" + t.spec.name + "': destination is " + describe(t.spec) + " but " + what +
                      " has " + describe(spec));
    }
    if (t.data == nullptr) throw UserError("pull: tensor '" + t.spec.name + "' has a null buffer");
    if (t.bytes < spec.bytes()) {
      throw UserError("pull: destination buffer for '" + t.spec.name + "' holds " + std::to_string(t.bytes) +
                      " bytes, " + describe(spec) + " needs " + std::to_string(spec.bytes()));
    }
    out.tensors.push_back(t);
    out.dests.push_back(transfer::Destination{*idx, t.data, t.memory, {}});
  }
  // Two destinations of one published tensor: whole-tensor reads would land twice in one plan.
  std::set<std::uint32_t> whole;
  for (const auto& d : out.dests) {
    if (!whole.insert(d.tensor).second) {
      throw UserError("pull: two destinations are all of tensor '" + m.tensors[d.tensor].spec.name + "' of " + what);
    }
  }
  // A published box a box destination holds whole and contiguous (a dim-0 cut: FSDP,
  // column-parallel TP) is that tensor at an offset: read in place, and relayed, as it is.
  std::vector<transfer::Destination> boxes;
  for (auto& d : out.boxes) {
    const auto& spec = m.tensors[d.tensor].spec;
    if (const auto at = whole_run(d, spec.bytes()); at && whole.insert(d.tensor).second) {
      auto* base = static_cast<unsigned char*>(d.data) + *at;
      out.tensors.push_back(Tensor{spec, base, spec.bytes(), d.memory});
      out.dests.push_back(transfer::Destination{d.tensor, base, d.memory, {}});
    } else {
      boxes.push_back(std::move(d));
    }
  }
  out.boxes = std::move(boxes);
  return out;
}

// A pull into device memory relays only when the data paths can expose it (device IPC); else
// it runs without relaying (logged), as the host copy that relaying would need is not made.
bool device_relayable(const Manifest& m, const PullJob& job, HubContext& ctx) {
  for (std::size_t i = 0; i < job.rest.size(); ++i) {
    if (job.rest[i].memory != MemoryKind::kCuda) continue;
    const transport::MemoryRange r{job.rest[i].data, m.tensors[job.rest_dests[i].tensor].spec.bytes(),
                                   MemoryKind::kCuda};
    if (!ctx.transport.can_expose(r)) {
      ctx.log.info("pull of " + vname(m.model, m.version) + " into device memory does not relay: no data path (" +
                   std::string(ctx.transport.name()) + ") exposes device memory");
      return false;
    }
  }
  return true;
}

// Whether a pull that lost every holder of some chunk reads the version's snapshot file instead.
// Not a pull into boxes: the snapshot reader fills whole tensors only.
bool snapshot_fallback(const PullJob& job) { return !job.reply.snapshot.empty(); }

// The relay offer's RelayOffer::progress for `ref`: empty without progress bytes.
std::string progress_descriptor(const Reference& ref) { return ref.progress ? ref.progress->descriptor() : ""; }

}  // namespace

FinishGuard::~FinishGuard() {
  try {
    client_.finish(request_);
  } catch (const std::exception& e) {
    Logger("hub").warn(std::string("finish after pull failed: ") + e.what());
  }
}

coord::Group group_or_solo(const std::optional<Group>& g, const char* prefix, coord::WorkerId self) {
  if (!g) return coord::Group{std::string(prefix) + std::to_string(self), 1, 0};
  validate_name("group name", g->name);
  if (g->size == 0 || g->rank >= g->size) throw UserError("group '" + g->name + "': rank out of range");
  return coord::Group{g->name, g->size, g->rank};
}

std::unique_ptr<PullJob> Puller::prepare(const std::string& model, const Version& version, std::span<const Tensor> into,
                                         const PullOptions& options) {
  if (into.empty()) throw UserError("pull: no destination tensors");
  if (options.deadline && options.deadline->count() <= 0) throw UserError("pull: deadline must be positive");
  const auto self = ctx_.id();
  const auto g = group_or_solo(options.group, "reader-w", self);
  auto job = std::make_unique<PullJob>();
  job->model = model;
  job->options = options;
  // The coordinator numbers the group's pulls (seq 0 asks it to); finish names the pull it said.
  const auto resolve_start = Clock::now();
  job->reply = ctx_.client.resolve(coord::ResolveRequest{self, model, version.value(), g, 0});
  const Manifest& m = *job->reply.manifest;
  job->finish =
      std::make_unique<FinishGuard>(ctx_.client, coord::FinishRequest{self, model, m.version, g, job->reply.seq});
  const auto matched = match_destinations(m, into, *ctx_.device);
  job->start = Clock::now();
  job->result.resolve_seconds = std::chrono::duration<double>(job->start - resolve_start).count();

  // Tensors this rank already holds (it published them, or relays them from an earlier pull
  // into other buffers): a local copy; the coordinator never assigns a reader its own chunks.
  PullResult& result = job->result;
  result.version = m.version;
  for (std::size_t i = 0; i < matched.tensors.size(); ++i) {
    if (const Tensor* own = table_.held_tensor(m, matched.tensors[i].spec.name)) {
      result.local_bytes += copy_own(m, matched.dests[i], *own, options.verify, *ctx_.device);
    } else {
      job->rest.push_back(matched.tensors[i]);
      job->rest_dests.push_back(matched.dests[i]);
    }
  }
  for (const auto& d : matched.boxes) {
    if (const Tensor* own = table_.held_tensor(m, m.tensors[d.tensor].spec.name)) {
      result.local_bytes += copy_own_runs(m, d, *own, options.verify, *ctx_.device);
    } else {
      job->boxes.push_back(d);
    }
  }
  job->engine_dests = job->rest_dests;
  job->engine_dests.insert(job->engine_dests.end(), job->boxes.begin(), job->boxes.end());
  if (job->engine_dests.empty()) return job;

  // A publisher of this version cannot also be its relay holder: it serves its shard, not the
  // tensors it pulls. Otherwise offer only the new buffers (the coordinator merges them into
  // an earlier offer of this version). Box destinations that are not whole published tensors
  // are not offered: they hold parts of chunks, or chunks strided (the engine announces none of
  // their chunks); a pull of nothing else does not relay.
  job->relay =
      options.relay && !job->rest.empty() && !table_.has_origin(model, m.version) && device_relayable(m, *job, ctx_);
  if (const auto partial = job->relay ? table_.relays_naming(model, m.version, job->rest) : std::nullopt) {
    try {
      withdraw_(*partial);
    } catch (const NotFoundError&) {
      // forgotten already
    }
    table_.remove(model, m.version, false);
  }
  if (job->relay) {
    std::vector<transport::MemoryRange> mem;
    for (std::size_t i = 0; i < job->rest.size(); ++i) {
      mem.push_back(transport::MemoryRange{job->rest[i].data, m.tensors[job->rest_dests[i].tensor].spec.bytes(),
                                           job->rest[i].memory});
    }
    job->ref = Reference{model, m.version, ctx_.transport.expose(mem), ranges_of(job->rest), false, job->rest};
    job->regions.resize(m.tensors.size());
    for (std::size_t i = 0; i < job->rest_dests.size(); ++i) {
      job->regions[job->rest_dests[i].tensor] = job->ref.exposure->descriptors()[i];
    }
    if (ctx_.options.plan) {
      // Planned readers behind this one read these bytes to see which chunks it has; one set per
      // version (an earlier pull of it into other buffers shares its own), zeroed when new.
      job->ref.progress = table_.relay_progress(model, m.version);
      if (!job->ref.progress) {
        job->ref.progress = make_progress_bytes(ctx_.transport, static_cast<std::uint32_t>(m.chunks.size()), ctx_.log);
      }
    }
    ctx_.client.offer_relay(coord::RelayOffer{self, model, m.version, job->regions, progress_descriptor(job->ref)});
    job->ref.relay_regions = job->regions;
  }
  // Every chunk of the engine's destinations: what this reader relays once the pull is done.
  for (const auto& d : job->rest_dests) {
    const auto& e = m.tensors[d.tensor];
    for (std::uint32_t c = 0; c < e.num_chunks; ++c) job->all_chunks.push_back(e.first_chunk + c);
  }

  auto& eo = job->eo;
  eo.verify = options.verify;
  eo.relay = job->relay;
  eo.inflight = ctx_.options.inflight;
  eo.verify_threads = ctx_.options.verify_threads >= 0 ? static_cast<std::uint32_t>(ctx_.options.verify_threads)
                                                       : std::min(3u, usable_cpus() - 1);
  eo.deadline = options.deadline.value_or(ctx_.options.pull_deadline);
  eo.trace = ctx_.trace;
  eo.plan = ctx_.options.plan;
  eo.scatter_reads = ctx_.options.scatter_reads;
  eo.progress_bytes = job->ref.progress ? job->ref.progress->data() : nullptr;
  const bool box_on_device = std::any_of(job->boxes.begin(), job->boxes.end(),
                                         [](const transfer::Destination& d) { return d.memory == MemoryKind::kCuda; });
  if (any_device_memory(job->rest) || box_on_device) eo.device = &ctx_.device->get();
  if (job->options.progress) {
    const auto local = result.local_bytes;
    eo.progress = [p = job->options.progress, local](std::uint64_t done, std::uint64_t total) {
      p(local + done, local + total);
    };
  }
  return job;
}

void Puller::transfer(PullJob& job, transport::Transport& lane, const std::atomic<bool>* cancel) {
  if (job.engine_dests.empty()) return;
  job.eo.cancel = cancel;
  transfer::PullEngine engine(ctx_.client, lane, ctx_.id());
  job.stats = engine.run(*job.reply.manifest, job.engine_dests, job.eo);
}

PullResult Puller::finish(PullJob& job, std::exception_ptr error) {
  PullResult& result = job.result;
  if (job.engine_dests.empty()) {
    result.bytes = result.local_bytes;
    if (job.options.progress) job.options.progress(result.bytes, result.bytes);
    result.seconds = seconds_since(job.start);
    return result;
  }
  if (error) {
    try {
      std::rethrow_exception(error);
    } catch (const transfer::ChunksUnavailable& e) {
      if (snapshot_fallback(job)) return from_snapshot(job, e.what());
      if (job.relay) table_.add(std::move(job.ref));
      throw;
    } catch (const transfer::ChunksCorrupt& e) {  // every live holder of a chunk served bad bytes
      if (snapshot_fallback(job)) return from_snapshot(job, e.what());
      if (job.relay) table_.add(std::move(job.ref));
      throw;
    } catch (...) {
      // Chunks already verified stay valid; keep serving them until the buffers are reused.
      if (job.relay) table_.add(std::move(job.ref));
      throw;
    }
  }
  if (job.relay) {
    job.ref.held = job.all_chunks;
    table_.add(std::move(job.ref));
  }
  result.bytes = job.stats.bytes + result.local_bytes;
  result.seconds = seconds_since(job.start);
  result.origin_bytes = job.stats.origin_bytes;
  result.relay_bytes = job.stats.relay_bytes;
  result.failed_reads = job.stats.failed_reads;
  result.transfer_seconds = job.stats.seconds;
  result.no_source_seconds = job.stats.no_source_seconds;
  result.verify_seconds = job.stats.verify_seconds;
  result.planned = job.stats.planned;
  result.plan_calls = job.stats.plan_calls;
  result.bounced_bytes = job.stats.bounced_bytes;
  result.staged_bytes = job.stats.staged_bytes;
  result.scattered_bytes = job.stats.scattered_bytes;
  result.digested_bytes = job.stats.digested_bytes;
  return result;
}

PullResult Puller::from_snapshot(PullJob& job, const std::string& why) {
  // Read from the version's snapshot file. The buffers are about to be overwritten: stop
  // serving what the engine may have announced from them first, offer them again once full.
  // (Withdrawing the holder withdraws every relay of this version this rank serves.)
  const Manifest& m = *job.reply.manifest;
  const auto& model = job.model;
  PullResult& result = job.result;
  if (job.relay) {
    try {
      table_.withdraw(model, m.version);
    } catch (const NotFoundError&) {
      // forgotten already
    } catch (...) {
      table_.add(std::move(job.ref));
      throw;
    }
    table_.remove(model, m.version, false);
  }
  result.file_bytes = read_snapshot(job.reply.snapshot, m, job.rest, job.options.verify || job.relay, why,
                                    job.eo.progress, *ctx_.device);
  // Boxes: the chunks their runs touch, from the datasets of the published boxes they meet.
  result.file_bytes += read_snapshot_boxes(job.reply.snapshot, m, job.boxes, job.options.verify, why, *ctx_.device);
  result.bytes = result.file_bytes + result.local_bytes;
  if (job.relay) {
    if (job.ref.progress) job.ref.progress->mark(job.all_chunks);
    ctx_.client.offer_relay(coord::RelayOffer{ctx_.id(), model, m.version, job.regions, progress_descriptor(job.ref)});
    job.ref.held = job.all_chunks;
    table_.add(std::move(job.ref));
    ctx_.client.complete(coord::CompleteRequest{ctx_.id(), model, m.version, {}, job.all_chunks, {}, {}});
  }
  result.seconds = seconds_since(job.start);
  ctx_.log.info("read " + vname(model, m.version) + " from snapshot " + job.reply.snapshot + " (" +
                std::to_string(result.file_bytes) + " bytes): no live holder for some chunks");
  return result;
}

PullResult Puller::pull(const std::string& model, const Version& version, std::span<const Tensor> into,
                        const PullOptions& options) {
  auto job = prepare(model, version, into, options);
  std::exception_ptr error;
  try {
    transfer(*job, ctx_.transport, nullptr);
  } catch (...) {
    error = std::current_exception();
  }
  return finish(*job, error);
}

Manifest Puller::manifest(const std::string& model, const Version& version) {
  const auto self = ctx_.id();
  const coord::Group g{"manifest-w" + std::to_string(self) + "-" + std::to_string(++manifest_calls_), 1, 0};
  auto reply = ctx_.client.resolve(coord::ResolveRequest{self, model, version.value(), g, 0});
  ctx_.client.finish(coord::FinishRequest{self, model, reply.manifest->version, g, reply.seq});
  return *reply.manifest;
}

}  // namespace tensorhub
