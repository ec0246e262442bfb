// Puller: resolve one version for the reading group, check the destinations against its
// manifest, copy what this rank holds itself, offer the rest as relay sources, run the chunk
// engine, report done.
#include <chrono>
#include <cstring>
#include <optional>
#include <set>
#include <utility>

#include "puller.hpp"
#include "tensorhub/core/checksum.hpp"
#include "tensorhub/core/validate.hpp"
#include "tensorhub/transfer/pull_engine.hpp"

namespace tensorhub {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Releases the reading group's pin on the resolved version whatever happens.
class FinishGuard {
 public:
  FinishGuard(coord::Client& c, coord::FinishRequest r) : client_(c), request_(std::move(r)) {}
  ~FinishGuard() {
    try {
      client_.finish(request_);
    } catch (const std::exception& e) {
      Logger("hub").warn(std::string("finish after pull failed: ") + e.what());
    }
  }
  FinishGuard(const FinishGuard&) = delete;
  FinishGuard& operator=(const FinishGuard&) = delete;

 private:
  coord::Client& client_;
  coord::FinishRequest request_;
};

// One destination per tensor of `into`, in the same order.
std::vector<transfer::Destination> match_destinations(const Manifest& m, std::span<const Tensor> into) {
  const std::string what = vname(m.model, m.version);
  std::vector<transfer::Destination> out;
  std::set<std::string> seen;
  for (const auto& t : into) {
    if (!seen.insert(t.spec.name).second) throw UserError("pull: tensor '" + t.spec.name + "' given twice");
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
    if (t.memory != MemoryKind::kHost) throw UserError("pull: only host memory is supported in this build");
    out.push_back(transfer::Destination{*idx, t.data});
  }
  return out;
}

// Copies tensor `d` of `m` from this rank's own memory `src` (a reference it serves), checking
// every chunk's checksum when `verify`. Returns the bytes copied.
std::uint64_t copy_own(const Manifest& m, const transfer::Destination& d, const Tensor& src, bool verify) {
  const auto& e = m.tensors[d.tensor];
  const auto n = e.spec.bytes();
  if (src.memory != MemoryKind::kHost) throw UserError("pull: only host memory is supported in this build");
  if (src.data != d.data) std::memcpy(d.data, src.data, n);
  for (std::uint32_t c = 0; verify && c < e.num_chunks; ++c) {
    const auto& ch = m.chunks[e.first_chunk + c];
    if (checksum64(static_cast<const std::byte*>(d.data) + ch.offset, ch.length) != ch.checksum) {
      throw ChecksumError(vname(m.model, m.version) + ": tensor '" + e.spec.name + "' chunk " + std::to_string(c) +
                          " copied from this rank's own reference does not match its checksum (that memory "
                          "changed while it was referenced)");
    }
  }
  return n;
}

}  // namespace

coord::Group group_or_solo(const std::optional<Group>& g, const char* prefix, coord::WorkerId self) {
  if (!g) return coord::Group{std::string(prefix) + std::to_string(self), 1, 0};
  validate_name("group name", g->name);
  if (g->size == 0 || g->rank >= g->size) throw UserError("group '" + g->name + "': rank out of range");
  return coord::Group{g->name, g->size, g->rank};
}

PullResult Puller::pull(const std::string& model, const Version& version, std::span<const Tensor> into,
                        const PullOptions& options) {
  if (into.empty()) throw UserError("pull: no destination tensors");
  const auto self = ctx_.id();
  const auto g = group_or_solo(options.group, "reader-w", self);
  // The coordinator numbers the group's pulls (seq 0 asks it to); finish names the pull it said.
  const auto resolve_start = Clock::now();
  const auto reply = ctx_.client.resolve(coord::ResolveRequest{self, model, version.value(), g, 0});
  const Manifest& m = reply.manifest;
  FinishGuard finish(ctx_.client, coord::FinishRequest{self, model, m.version, g, reply.seq});
  const auto dests = match_destinations(m, into);
  const auto start = Clock::now();

  // Tensors this rank already holds (it published them, or relays them from an earlier pull
  // into other buffers): a local copy; the coordinator never assigns a reader its own chunks.
  PullResult result;
  result.version = m.version;
  result.resolve_seconds = std::chrono::duration<double>(start - resolve_start).count();
  std::vector<Tensor> rest;
  std::vector<transfer::Destination> rest_dests;
  for (std::size_t i = 0; i < into.size(); ++i) {
    if (const Tensor* own = table_.held_tensor(m, into[i].spec.name)) {
      result.local_bytes += copy_own(m, dests[i], *own, options.verify);
    } else {
      rest.push_back(into[i]);
      rest_dests.push_back(dests[i]);
    }
  }
  if (rest.empty()) {
    result.bytes = result.local_bytes;
    if (options.progress) options.progress(result.bytes, result.bytes);
    result.seconds = seconds_since(start);
    return result;
  }

  // A publisher of this version cannot also be its relay holder: it serves its shard, not the
  // tensors it pulls. Otherwise offer only the new buffers (the coordinator merges them into
  // an earlier offer of this version).
  const bool relay = options.relay && !table_.has_origin(model, m.version);
  if (const auto partial = relay ? table_.relays_naming(model, m.version, rest) : std::nullopt) {
    try {
      withdraw_(*partial);
    } catch (const NotFoundError&) {
      // forgotten already
    }
    table_.remove(model, m.version, false);
  }
  Reference ref;
  std::vector<std::string> regions;
  if (relay) {
    std::vector<transport::MemoryRange> mem;
    for (std::size_t i = 0; i < rest.size(); ++i) {
      mem.push_back(transport::MemoryRange{rest[i].data, m.tensors[rest_dests[i].tensor].spec.bytes(), rest[i].memory});
    }
    ref = Reference{model, m.version, ctx_.transport.expose(mem), ranges_of(rest), false, rest};
    regions.resize(m.tensors.size());
    for (std::size_t i = 0; i < rest_dests.size(); ++i) regions[rest_dests[i].tensor] = ref.exposure->descriptors()[i];
    ctx_.client.offer_relay(coord::RelayOffer{self, model, m.version, regions});
    ref.relay_regions = regions;
  }
  // Every chunk of the engine's destinations: what this reader relays once the pull is done.
  std::vector<std::uint32_t> all_chunks;
  for (const auto& d : rest_dests) {
    const auto& e = m.tensors[d.tensor];
    for (std::uint32_t c = 0; c < e.num_chunks; ++c) all_chunks.push_back(e.first_chunk + c);
  }

  transfer::EngineOptions eo;
  eo.verify = options.verify;
  eo.relay = relay;
  eo.inflight = ctx_.options.inflight;
  eo.deadline = ctx_.options.pull_deadline;
  eo.trace = ctx_.trace;
  const auto local = result.local_bytes;
  if (options.progress) {
    eo.progress = [&options, local](std::uint64_t done, std::uint64_t total) {
      options.progress(local + done, local + total);
    };
  }
  transfer::PullEngine engine(ctx_.client, ctx_.transport, self);
  transfer::PullStats stats;
  std::optional<std::string> unavailable;  // some chunk has no live holder
  try {
    stats = engine.run(m, rest_dests, eo);
  } catch (const transfer::ChunksUnavailable& e) {
    if (reply.snapshot.empty()) {
      if (relay) table_.add(std::move(ref));
      throw;
    }
    unavailable = e.what();
  } catch (const transfer::ChunksCorrupt& e) {  // every live holder of a chunk served bad bytes
    if (reply.snapshot.empty()) {
      if (relay) table_.add(std::move(ref));
      throw;
    }
    unavailable = e.what();
  } catch (...) {
    // Chunks already verified stay valid; keep serving them until the buffers are reused.
    if (relay) table_.add(std::move(ref));
    throw;
  }
  if (!unavailable) {
    if (relay) {
      ref.held = all_chunks;
      table_.add(std::move(ref));
    }
    result.bytes = stats.bytes + local;
    result.seconds = seconds_since(start);
    result.origin_bytes = stats.origin_bytes;
    result.relay_bytes = stats.relay_bytes;
    result.failed_reads = stats.failed_reads;
    result.transfer_seconds = stats.seconds;
    result.no_source_seconds = stats.no_source_seconds;
    result.verify_seconds = stats.verify_seconds;
    return result;
  }

  // Read from the version's snapshot file. The buffers are about to be overwritten: stop
  // serving what the engine may have announced from them first, offer them again once full.
  // (Withdrawing the holder withdraws every relay of this version this rank serves.)
  if (relay) {
    try {
      table_.withdraw(model, m.version);
    } catch (const NotFoundError&) {
      // forgotten already
    } catch (...) {
      table_.add(std::move(ref));
      throw;
    }
    table_.remove(model, m.version, false);
  }
  const auto progress = eo.progress;
  result.file_bytes = read_snapshot(reply.snapshot, m, rest, options.verify || relay, *unavailable, progress);
  result.bytes = result.file_bytes + local;
  if (relay) {
    ctx_.client.offer_relay(coord::RelayOffer{self, model, m.version, regions});
    ref.held = all_chunks;
    table_.add(std::move(ref));
    ctx_.client.complete(coord::CompleteRequest{self, model, m.version, {}, all_chunks});
  }
  result.seconds = seconds_since(start);
  ctx_.log.info("read " + vname(model, m.version) + " from snapshot " + reply.snapshot + " (" +
                std::to_string(result.file_bytes) + " bytes): no live holder for some chunks");
  return result;
}

Manifest Puller::manifest(const std::string& model, const Version& version) {
  const auto self = ctx_.id();
  const coord::Group g{"manifest-w" + std::to_string(self) + "-" + std::to_string(++manifest_calls_), 1, 0};
  auto reply = ctx_.client.resolve(coord::ResolveRequest{self, model, version.value(), g, 0});
  ctx_.client.finish(coord::FinishRequest{self, model, reply.manifest.version, g, reply.seq});
  return std::move(reply.manifest);
}

}  // namespace tensorhub
