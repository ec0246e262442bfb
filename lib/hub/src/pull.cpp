// Hub::Impl::pull: resolve one version for the reading group, check the destinations against
// its manifest, offer them as relay sources, run the chunk engine, report done.
#include <chrono>
#include <optional>
#include <set>
#include <utility>

#include "hub_impl.hpp"
#include "tensorhub/transfer/pull_engine.hpp"

namespace tensorhub {
namespace {

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

std::vector<transfer::Destination> match_destinations(const Manifest& m, std::span<const Tensor> into) {
  const std::string what = "'" + m.model + "' v" + std::to_string(m.version);
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

}  // namespace

PullResult Hub::Impl::pull(const std::string& model, const Version& version, std::span<const Tensor> into,
                           const PullOptions& options) {
  if (into.empty()) throw UserError("pull: no destination tensors");
  std::vector<ByteRange> ranges;
  for (const auto& t : into) {
    const auto b = reinterpret_cast<std::uintptr_t>(t.data);
    ranges.push_back(ByteRange{b, b + t.bytes});
  }
  // We are about to overwrite these buffers: stop serving whatever we relayed from them.
  withdraw_relays_overlapping(ranges);

  const auto g = group_or_solo(options.group, "reader-w");
  const auto seq = ++pull_seq_[{model, g.name}];
  const auto reply = client_->resolve(coord::ResolveRequest{self_, model, version.value(), g, seq});
  const Manifest& m = reply.manifest;
  FinishGuard finish(*client_, coord::FinishRequest{self_, model, m.version, g, seq});

  const auto dests = match_destinations(m, into);
  Reference relay;
  std::vector<std::string> regions;
  if (options.relay) {
    std::vector<transport::MemoryRange> mem;
    for (const auto& t : into)
      mem.push_back(transport::MemoryRange{t.data, m.tensors[*m.find(t.spec.name)].spec.bytes(), t.memory});
    relay = Reference{model,  m.version, transport_->expose(mem),
                      ranges, false,     std::vector<Tensor>(into.begin(), into.end())};
    regions.resize(m.tensors.size());
    for (std::size_t i = 0; i < dests.size(); ++i) regions[dests[i].tensor] = relay.exposure->descriptors()[i];
    client_->offer_relay(coord::RelayOffer{self_, model, m.version, regions});
    relay.relay_regions = regions;
  }
  // Every chunk of the destinations: what this reader relays once the pull is done.
  std::vector<std::uint32_t> all_chunks;
  for (const auto& d : dests) {
    const auto& e = m.tensors[d.tensor];
    for (std::uint32_t c = 0; c < e.num_chunks; ++c) all_chunks.push_back(e.first_chunk + c);
  }

  transfer::EngineOptions eo;
  eo.verify = options.verify;
  eo.relay = options.relay;
  eo.inflight = options_.inflight;
  eo.deadline = options_.pull_deadline;
  eo.progress = options.progress;
  transfer::PullEngine engine(*client_, *transport_, self_);
  transfer::PullStats stats;
  std::optional<std::string> unavailable;  // some chunk has no live holder
  const auto start = std::chrono::steady_clock::now();
  try {
    stats = engine.run(m, dests, eo);
  } catch (const transfer::ChunksUnavailable& e) {
    if (reply.snapshot.empty()) {
      if (options.relay) references_.push_back(std::move(relay));
      throw;
    }
    unavailable = e.what();
  } catch (...) {
    // Chunks already verified stay valid; keep serving them until the buffers are reused.
    if (options.relay) references_.push_back(std::move(relay));
    throw;
  }
  PullResult result;
  result.version = m.version;
  if (!unavailable) {
    if (options.relay) {
      relay.held = all_chunks;
      references_.push_back(std::move(relay));
    }
    result.bytes = stats.bytes;
    result.seconds = stats.seconds;
    result.origin_bytes = stats.origin_bytes;
    result.relay_bytes = stats.relay_bytes;
    result.failed_reads = stats.failed_reads;
    return result;
  }

  // Read from the version's snapshot file. The buffers are about to be overwritten: stop
  // serving what the engine may have announced from them first, offer them again once full.
  if (options.relay) {
    try {
      withdraw(relay);
    } catch (const NotFoundError&) {
      // forgotten already
    } catch (...) {
      references_.push_back(std::move(relay));
      throw;
    }
  }
  result.file_bytes =
      read_snapshot(reply.snapshot, m, into, options.verify || options.relay, *unavailable, options.progress);
  result.bytes = result.file_bytes;
  if (options.relay) {
    client_->offer_relay(coord::RelayOffer{self_, model, m.version, regions});
    relay.held = all_chunks;
    references_.push_back(std::move(relay));
    client_->complete(coord::CompleteRequest{self_, model, m.version, {}, all_chunks});
  }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  log_.info("read '" + model + "' v" + std::to_string(m.version) + " from snapshot " + reply.snapshot + " (" +
            std::to_string(result.file_bytes) + " bytes): no live holder for some chunks");
  return result;
}

Manifest Hub::Impl::manifest(const std::string& model, const Version& version) {
  const coord::Group g{"manifest-w" + std::to_string(self_) + "-" + std::to_string(++manifest_calls_), 1, 0};
  auto reply = client_->resolve(coord::ResolveRequest{self_, model, version.value(), g, 1});
  client_->finish(coord::FinishRequest{self_, model, reply.manifest.version, g, 1});
  return std::move(reply.manifest);
}

}  // namespace tensorhub
