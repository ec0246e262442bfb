// This worker's registration at the coordinator (private header): registers at join, keeps the
// lease from a heartbeat thread, and rebuilds after a lost registration (its lease expired while
// the process was stopped or cut off, or a standby took over from a dead primary). The
// coordinator's state is soft: the worker registers again and re-creates every reference it
// still serves (origins re-publish their shard, so versions re-commit once every shard is back;
// relays re-offer what they hold once the version exists again).
#pragma once

#include <atomic>
#include <functional>
#include <memory>

#include "heartbeat.hpp"
#include "hub_context.hpp"
#include "reference_table.hpp"

namespace tensorhub {

class Registration {
 public:
  // Registers `info` (sets ctx.self). Throws what the coordinator throws.
  Registration(HubContext& ctx, coord::WorkerInfo info);
  ~Registration();
  Registration(const Registration&) = delete;
  Registration& operator=(const Registration&) = delete;

  // Starts heartbeating; `try_rebuild` runs rebuild() if the hub's API lock is free (true if it
  // ran), from the heartbeat thread.
  void start_heartbeat(std::function<bool()> try_rebuild);
  // Stops the heartbeat thread (no rebuild may race a teardown). Idempotent.
  void stop_heartbeat() noexcept;

  // The heartbeat thread saw UnknownWorker: the next API call rebuilds first.
  bool lost() const { return heartbeat_ && heartbeat_->lost(); }
  // Registers again and re-creates `table`'s references (`force`: even if the heartbeat thread
  // has not noticed the loss). Expects the hub's API lock held.
  void rebuild(ReferenceTable& table, bool force = false);
  // Leaves the coordinator (a coordinator that forgot us already is fine).
  void deregister();

 private:
  // Re-creates one reference; false if the coordinator cannot take it yet (a relay of a
  // version no origin has re-published).
  bool restore(Reference& ref);

  HubContext& ctx_;
  coord::WorkerInfo info_;
  std::atomic<std::uint32_t> pending_restores_{0};
  std::unique_ptr<HeartbeatThread> heartbeat_;
};

}  // namespace tensorhub
