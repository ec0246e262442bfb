// One rank's pulls (private header): resolve one version for the reading group, check the
// destinations against its manifest, copy what this rank itself holds from its own memory,
// offer the rest as relay sources, run the chunk engine over the rest, report done.
#pragma once

#include <functional>
#include <optional>
#include <span>
#include <string>
#include <utility>

#include "hub_context.hpp"
#include "reference_table.hpp"
#include "tensorhub/hub.hpp"

namespace tensorhub {

class Puller {
 public:
  // `withdraw` stops serving a version (withdraw_or_offload): a pull into new buffers of a
  // tensor this rank relays only in part (an earlier pull failed) withdraws that relay first,
  // since the coordinator keeps a tensor's first offered region.
  using Withdraw = std::function<void(const Withdrawal&)>;
  Puller(HubContext& ctx, ReferenceTable& table, Withdraw withdraw)
      : ctx_(ctx), table_(table), withdraw_(std::move(withdraw)) {}

  // Hub::pull. The caller has validated the names and stopped relaying whatever overlaps `into`.
  PullResult pull(const std::string& model, const Version& version, std::span<const Tensor> into,
                  const PullOptions& options);
  // Hub::manifest: resolves as a reading group of its own and finishes at once.
  Manifest manifest(const std::string& model, const Version& version);

 private:
  HubContext& ctx_;
  ReferenceTable& table_;
  Withdraw withdraw_;
  std::uint64_t manifest_calls_ = 0;
};

// The reading group of a pull or publish: `g`, or this worker alone (`<prefix><worker id>`).
coord::Group group_or_solo(const std::optional<Group>& g, const char* prefix, coord::WorkerId self);

// Reads `into` (tensors of `m`) from the snapshot file at `path`, after checking that it holds
// the bytes `m`'s checksums describe; returns the bytes read. `why` says why the file is read.
std::uint64_t read_snapshot(const std::string& path, const Manifest& m, std::span<const Tensor> into, bool verify,
                            const std::string& why, const std::function<void(std::uint64_t, std::uint64_t)>& progress);

}  // namespace tensorhub
