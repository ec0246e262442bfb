// One rank's pulls (private header): resolve one version for the reading group, check the
// destinations against its manifest, copy what this rank itself holds from its own memory,
// offer the rest as relay sources, run the chunk engine over the rest, report done.
//
// A pull runs in three phases so that the long one holds no lock: prepare() and finish() touch
// the ReferenceTable and run with the hub's API mutex held; transfer() (the chunk engine) uses
// only the coordinator client and a transport lane of its own, on the caller's thread (pull) or
// a hub worker thread (pull_async), with the API mutex free.
#pragma once

#include <atomic>
#include <chrono>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "hub_context.hpp"
#include "reference_table.hpp"
#include "tensorhub/hub.hpp"
#include "tensorhub/transfer/pull_engine.hpp"

namespace tensorhub {

// Releases the reading group's pin on the resolved version whatever happens.
class FinishGuard {
 public:
  FinishGuard(coord::Client& c, coord::FinishRequest r) : client_(c), request_(std::move(r)) {}
  ~FinishGuard();
  FinishGuard(const FinishGuard&) = delete;
  FinishGuard& operator=(const FinishGuard&) = delete;

 private:
  coord::Client& client_;
  coord::FinishRequest request_;
};

// One pull between its phases.
struct PullJob {
  std::string model;
  PullOptions options;
  coord::ResolveReply reply;
  std::unique_ptr<FinishGuard> finish;  // the group's pin, released when the job goes
  std::chrono::steady_clock::time_point start;
  PullResult result;
  std::vector<Tensor> rest;  // what the engine reads (not held by this rank)
  std::vector<transfer::Destination> rest_dests;
  std::vector<transfer::Destination> boxes;         // box destinations the engine reads (no relay)
  std::vector<transfer::Destination> engine_dests;  // rest_dests, then boxes
  bool relay = false;
  Reference ref;  // the relay reference of `rest`, added to the table by finish()
  std::vector<std::string> regions;
  std::vector<std::uint32_t> all_chunks;
  transfer::EngineOptions eo;
  transfer::PullStats stats;
};

class Puller {
 public:
  // `withdraw` stops serving a version (withdraw_or_offload): a pull into new buffers of a
  // tensor this rank relays only in part (an earlier pull failed) withdraws that relay first,
  // since the coordinator keeps a tensor's first offered region.
  using Withdraw = std::function<void(const Withdrawal&)>;
  Puller(HubContext& ctx, ReferenceTable& table, Withdraw withdraw)
      : ctx_(ctx), table_(table), withdraw_(std::move(withdraw)) {}

  // Hub::pull, phase 1 (API mutex held). The caller has validated the names and stopped relaying
  // whatever overlaps `into`. Resolves, copies this rank's own tensors, offers the relay.
  std::unique_ptr<PullJob> prepare(const std::string& model, const Version& version, std::span<const Tensor> into,
                                   const PullOptions& options);
  // Phase 2 (no lock): the chunk engine over the job's remaining tensors through `lane`; stops
  // with Cancelled when `cancel` is set. Throws what the engine throws.
  void transfer(PullJob& job, transport::Transport& lane, const std::atomic<bool>* cancel);
  // Phase 3 (API mutex held): records the relay reference; after a failed transfer (`error`)
  // falls back to the snapshot file when some chunk had no live holder, else rethrows `error`
  // (the chunks verified so far stay relayed until the buffers are reused).
  PullResult finish(PullJob& job, std::exception_ptr error);
  // All three phases on the caller's thread through ctx.transport's default lane (the
  // offloader's pulls, API mutex held throughout).
  PullResult pull(const std::string& model, const Version& version, std::span<const Tensor> into,
                  const PullOptions& options);
  // Hub::manifest: resolves as a reading group of its own and finishes at once.
  Manifest manifest(const std::string& model, const Version& version);

 private:
  PullResult from_snapshot(PullJob& job, const std::string& why);

  HubContext& ctx_;
  ReferenceTable& table_;
  Withdraw withdraw_;
  std::atomic<std::uint64_t> manifest_calls_{0};
};

// The reading group of a pull or publish: `g`, or this worker alone (`<prefix><worker id>`).
coord::Group group_or_solo(const std::optional<Group>& g, const char* prefix, coord::WorkerId self);

// Reads `into` (tensors of `m`) from the snapshot file at `path`, after checking that it holds
// the bytes `m`'s checksums describe; returns the bytes read. `why` says why the file is read.
// Tensors in device memory are read one at a time into a host staging buffer (the size of the
// largest of them), checked there, and copied to the device.
std::uint64_t read_snapshot(const std::string& path, const Manifest& m, std::span<const Tensor> into, bool verify,
                            const std::string& why, const std::function<void(std::uint64_t, std::uint64_t)>& progress,
                            HubDevice& device);
// NotFoundError (`why` and the cause) when the file is gone or unreadable, UserError when it
// does not hold the bytes `m`'s checksums describe.
void check_snapshot_file(const std::string& path, const Manifest& m, const std::string& why);
// Box destinations (resharding) from the snapshot file: the chunks each one's runs touch are read,
// checked when `verify`, and their pieces copied to it (device memory: a host-to-device copy per
// piece). Returns the bytes read.
std::uint64_t read_snapshot_boxes(const std::string& path, const Manifest& m,
                                  std::span<const transfer::Destination> boxes, bool verify, const std::string& why,
                                  HubDevice& device);

}  // namespace tensorhub
