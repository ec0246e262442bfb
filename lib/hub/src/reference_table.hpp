// The references this rank serves (private header): its published shards (origins) and the
// buffers of pulls it relays. One job: remember them, find what overlaps a byte range or holds
// a tensor, and withdraw one at the coordinator (waiting until no read of it is in flight).
//
// The coordinator keeps one holder per (worker, model, version). Two pulls of one version into
// different buffers are two relay references here but one holder there, so withdrawing either
// withdraws both: every lookup that removes a relay removes all relays of its version.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "hub_context.hpp"
#include "progress_bytes.hpp"
#include "tensorhub/coord/types.hpp"
#include "tensorhub/core/manifest.hpp"
#include "tensorhub/core/tensor.hpp"
#include "tensorhub/transport/transport.hpp"

namespace tensorhub {

struct ByteRange {
  std::uintptr_t begin = 0;
  std::uintptr_t end = 0;
  bool overlaps(const ByteRange& o) const { return begin < o.end && o.begin < end; }
  bool operator==(const ByteRange&) const = default;
};

// [data, data + bytes) of each tensor.
std::vector<ByteRange> ranges_of(std::span<const Tensor> tensors);

// A reference this rank serves: a published shard, or the buffers of a pull it relays.
struct Reference {
  std::string model;
  std::uint64_t version = 0;
  std::unique_ptr<transport::Exposure> exposure;
  std::vector<ByteRange> ranges;
  bool origin = true;
  std::vector<Tensor> tensors;  // the memory referenced, by tensor (what an offload copies)
  // What re-creates the reference at a coordinator that lost it (Registration): the publish
  // request of an origin; the relay offer's regions and the chunks held of a relay.
  coord::PublishRequest request{};
  std::vector<std::string> relay_regions{};
  std::vector<std::uint32_t> held{};
  // A relay's progress bytes (RelayOffer::progress), shared by the relays of one version; null
  // for an origin, or when plan mode is off or the transport could not expose them.
  std::shared_ptr<ProgressBytes> progress{};
  bool restored = true;  // known to the current coordinator
  // An origin whose publish has not reached the coordinator yet (publish_async still hashing):
  // exposed and guarding its memory like a published one, but not re-published on rebuild.
  bool pending = false;
  std::uint32_t restore_attempts = 0;
};

// A version this rank must stop serving: what withdraw_or_offload needs (the tensors it holds
// in memory, for an offload).
struct Withdrawal {
  std::string model;
  std::uint64_t version = 0;
  bool origin = false;
  std::vector<Tensor> tensors;
};

class ReferenceTable {
 public:
  explicit ReferenceTable(HubContext& ctx) : ctx_(ctx) {}

  void add(Reference ref) { refs_.push_back(std::move(ref)); }
  bool empty() const { return refs_.empty(); }
  std::vector<Reference>& all() { return refs_; }

  // An origin of (model, version), pending ones included.
  bool has_origin(const std::string& model, std::uint64_t version) const;
  // The pending origin reference of (model, version), or null.
  Reference* pending_origin(const std::string& model, std::uint64_t version);
  // This rank's memory holding the whole of tensor `name` of (model, version): its origin
  // reference, or a relay reference that holds every chunk of it. nullptr if none.
  const Tensor* held_tensor(const Manifest& m, const std::string& name) const;

  // The progress bytes of a relay of (model, version) in the table, or null.
  std::shared_ptr<ProgressBytes> relay_progress(const std::string& model, std::uint64_t version) const;
  // The relays of (model, version), as one Withdrawal, if one of them references a tensor
  // named in `names`.
  std::optional<Withdrawal> relays_naming(const std::string& model, std::uint64_t version,
                                          std::span<const Tensor> names) const;
  // The versions whose references overlap `ranges` (each once, with the tensors of all its
  // references). Throws UserError, changing nothing, if a published (origin) reference overlaps;
  // with `publishing`, only if one overlaps without being the identical range: one buffer may
  // back the same tensor in several versions (frozen weights), its exposure then shared
  // (MultiTransport) and each version unpublished on its own.
  std::vector<Withdrawal> relays_overlapping(const std::vector<ByteRange>& ranges, const std::string& why,
                                             bool publishing = false) const;
  // What withdrawing the newest reference means: its version, origin or relay.
  Withdrawal newest() const;
  // Removes every reference of (model, version) of that kind (origin or relay); the memory is
  // no longer exposed once they are gone.
  void remove(const std::string& model, std::uint64_t version, bool origin);
  // Moves them out instead (kept alive by the caller, e.g. until the hub deregisters).
  std::vector<Reference> take(const std::string& model, std::uint64_t version, bool origin);

  // Withdraws this worker's holder of (model, version) at the coordinator and waits until no
  // read of it is in flight (throws OffloadRequired, changing nothing, per Client::unpublish).
  // With `until`: TimeoutError once it passes with reads still in flight (the holder stays
  // withdrawn at the coordinator; withdrawing again waits again).
  void withdraw(const std::string& model, std::uint64_t version,
                std::optional<std::chrono::steady_clock::time_point> until = std::nullopt);

 private:
  HubContext& ctx_;
  std::vector<Reference> refs_;
};

}  // namespace tensorhub
