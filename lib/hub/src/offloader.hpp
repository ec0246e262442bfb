// Retention -> snapshot (private header): when this rank is the last holder of (some of) a
// retained version and wants to drop its reference (unpublish, close, reusing relay buffers),
// the version is written to an HDF5 snapshot and attached at the coordinator first, so it stays
// readable from the file. Exactly one leaving rank writes it: the coordinator's offload lease
// (design: tensorhub/coord/coordinator.hpp). Also attaches an existing file (recover).
#pragma once

#include <chrono>
#include <optional>
#include <span>
#include <string>

#include "hub_context.hpp"
#include "puller.hpp"
#include "reference_table.hpp"

namespace tensorhub {

class Offloader {
 public:
  Offloader(HubContext& ctx, ReferenceTable& table, Puller& puller) : ctx_(ctx), table_(table), puller_(puller) {}

  // table.withdraw(w), offloading the version to a snapshot first when the coordinator requires
  // it (OffloadRequired): takes part in the offload lease protocol. The caller removes the
  // references once this returns.
  // `until` bounds the wait for readers (ReferenceTable::withdraw).
  void withdraw_or_offload(const Withdrawal& w,
                           std::optional<std::chrono::steady_clock::time_point> until = std::nullopt);
  // Hub::attach_snapshot.
  void attach_snapshot(const std::string& path);

 private:
  // Collects the whole version (w's own tensors from memory, the rest by pulling), writes
  // <snapshot_dir>/<model>/v<version>.h5 and attaches it. Called with the offload lease held.
  void offload(const Withdrawal& w);

  HubContext& ctx_;
  ReferenceTable& table_;
  Puller& puller_;
};

}  // namespace tensorhub
