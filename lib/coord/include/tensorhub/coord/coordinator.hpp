// The coordinator: the hub's directory (models -> versions -> manifests -> references), pins,
// retention, reading-group resolution and source assignment. It stores references, never bytes.
// Its state is soft: everything in it is a copy of what workers hold and can be rebuilt from
// them. Thread-safe; serve it in-process (it implements Client) or over gRPC (GrpcServer).
//
// A thin locking facade over the parts it owns: Directory (models, versions, latest, dropping),
// WorkerRegistry (workers, leases, departed history), GroupReads (reading-group pulls and their
// numbering), SourceSlots (K accounting) and a Planner (source choice, no state). Its files:
// coordinator.cpp (registration, retention, status), coordinator_lifecycle.cpp (publish,
// unpublish, drains, deferred withdrawals), coordinator_groups.cpp (resolve, finish),
// coordinator_reads.cpp (relay offers, acquire, complete), coordinator_plans.cpp (plan, and
// the plan part of complete: held ranges, released sources), coordinator_liveness.cpp (reaping,
// forget_worker), coordinator_snapshot.cpp (snapshots, offload lease).
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>

#include "tensorhub/coord/client.hpp"
#include "tensorhub/coord/directory.hpp"
#include "tensorhub/coord/group_reads.hpp"
#include "tensorhub/coord/planner.hpp"
#include "tensorhub/coord/source_slots.hpp"
#include "tensorhub/coord/version_state.hpp"
#include "tensorhub/coord/worker_registry.hpp"
#include "tensorhub/core/limits.hpp"
#include "tensorhub/core/log.hpp"

namespace tensorhub::coord {

// Offloading a retained version (retention -> snapshot), and the offload lease.
//
// When the last live holder of some chunk of a retained version unpublishes (or leaves cleanly)
// and the version has no snapshot, unpublish refuses with OffloadRequired and changes nothing:
// that holder's memory must stay readable, because whoever writes the snapshot reads it from
// there. A multi-rank publishing group typically unpublishes on all ranks at once, and every
// rank is then the last holder of its own shard, so all of them get OffloadRequired. Exactly
// one process must write the file, and none may drop its reference before the file exists:
//
//   1. Each refused worker calls begin_offload(). The first gets kWrite: it now holds the
//      version's offload lease. The others get kWait (with the lease holder's id).
//   2. The lease holder collects the whole version (its own shard from its own memory, every
//      other chunk by an ordinary pull from the other holders, which still hold: they have not
//      withdrawn anything), writes the file, calls attach_snapshot() (which ends the lease) and
//      unpublishes again: with a snapshot attached, unpublish no longer refuses.
//   3. A kWait worker keeps its reference and simply retries unpublish after a short sleep. Its
//      reference stays readable while it waits, so the lease holder's pull can always finish:
//      nobody waits on a resource someone else holds while waiting on them (no deadlock).
//      Once the snapshot is attached its unpublish succeeds.
//   4. A lease whose holder has gone (deregistered, or its reference withdrawn) is stale: the
//      next begin_offload takes it over (kWrite). A writer that fails calls end_offload() so
//      another may try. A lease holder that hangs is bounded by the waiters' own deadline
//      (the hub's pull deadline) and by the lease: a writer that stops heartbeating is declared
//      dead and loses the lease.
//   5. begin_offload answers kDone when nothing needs writing any more (snapshot attached,
//      version released, or another live holder now has the caller's chunks): just retry.
//
// The coordinator never touches the file; it only stores its path (a file reference) next to
// the version's memory references.
//
// Reading groups. The coordinator numbers each reading group's pulls itself (ResolveRequest::seq
// is ignored): it counts, per (model, group name, worker), that worker's resolves, and a
// worker's next resolve joins the group's pull number count + 1 (ResolveReply::seq; the reader
// passes it back in FinishRequest::seq). The first member to resolve pull n decides its outcome
// for every member: a version, pinned for all `size` members, or "nothing found" (its
// NotFoundError, recorded without a pin), which every other member's pull n then gets too, even
// if a version was published in between; the group's pull n + 1 sees it, for all alike. (Before,
// a failed first resolve counted for nobody: a member that found nothing did not pull the
// version its group's other members then pulled as the same pull number, and the group's pin
// on it outlived every read.) A member whose resolve fails against an existing group pull
// (another explicit version, another group size) gives up its share of that pull's pin and that
// pull counts as consumed for it. A member that dies or leaves gives up its shares of the pulls
// it would still have joined. Groups have at most kMaxGroupSize members.
//
// Deferred withdrawal. An unpublishing group without barriers (each rank: publish(v);
// unpublish(v-1)) would otherwise open a gap: the fast rank withdraws its shard of v-1 while v
// is still pending, and the model has no readable version until v commits. So when withdrawing
// a reference would make the model's newest readable version unreadable while a newer version
// of the model is pending (some shards registered, not committed), the withdrawal is deferred:
// the reference keeps serving, unpublish returns at least 1 and wait_drained keeps waiting,
// until the newer version commits or its pending shards are dropped (unpublished, or their
// worker left or died); then the reference is withdrawn and drains as usual.

// Largest reading or publishing group (members): tensorhub/core/limits.hpp.
inline constexpr std::uint32_t kMaxGroupSize = limits::kMaxGroupSize;

struct CoordinatorConfig {
  std::uint32_t max_readers_per_source = 2;  // K: concurrent readers of its DC one holder serves
  std::uint32_t max_assign_per_call = 64;    // cap on AcquireRequest::max_assign
  // Plan-based pulls (plan_book.hpp): children per source and stripe. 1 (default) = one relay
  // chain per stripe: every relay and the publisher send one copy of the version, so the last
  // reader waits about S/B + N chunk times. K > 1 = K-ary striped trees (depth log_K N, an origin
  // sends up to 1 + (K-1)/K copies). Capped at max_readers_per_source.
  std::uint32_t plan_fanout = 1;
  // Plan-based pulls on hosts of several GPUs with a NIC each (rail-optimised fabrics): GPUs
  // (NICs) per host. Stripe s enters a host through the GPU whose WorkerInfo::gpu is s mod
  // plan_rails, the host's other GPUs get it from there over NVLink; a reader waits up to
  // plan_rail_wait for its host's rail GPU of a stripe (plan_book.hpp). 1: no rails.
  std::uint32_t plan_rails = 1;
  std::chrono::milliseconds plan_rail_wait{100};
  // How long a reader keeps its slot at a holder after its reads there drain (source_slots.hpp);
  // 0 releases it at once.
  std::chrono::milliseconds slot_grace{200};
  // Worker lease (liveness.hpp): a worker not heard from for this long is declared dead and its
  // references, pins and slots are removed. The hub heartbeats every lease/5. 0 = no expiry.
  std::chrono::milliseconds lease{5000};
  // High bits of every WorkerId this coordinator hands out (0 = random), so that ids from
  // another coordinator (before a failover or restart) are never mistaken for this one's.
  std::uint32_t incarnation = 0;
  // The coordinator's clock (tests inject one); empty = std::chrono::steady_clock::now.
  std::function<std::chrono::steady_clock::time_point()> clock{};
  // Source selection (planner.hpp); empty = DefaultPlanner.
  std::shared_ptr<const Planner> planner{};
};

class Coordinator final : public Client {
 public:
  explicit Coordinator(CoordinatorConfig config = {});

  WorkerId register_worker(const WorkerInfo& info) override;
  void deregister_worker(WorkerId worker) override;
  HeartbeatReply heartbeat(WorkerId worker) override;
  PublishReply publish(const PublishRequest& request) override;
  std::uint32_t unpublish(WorkerId worker, const std::string& model, std::uint64_t version) override;
  std::uint32_t wait_drained(WorkerId worker, const std::string& model, std::uint64_t version,
                             std::chrono::milliseconds timeout) override;
  void retain(const std::string& model, std::uint64_t version) override;
  void release(const std::string& model, std::uint64_t version) override;
  std::optional<std::uint64_t> latest(const std::string& model) override;
  std::optional<std::uint64_t> wait_for(const std::string& model, std::optional<std::uint64_t> newer_than,
                                        std::chrono::milliseconds timeout) override;
  ResolveReply resolve(const ResolveRequest& request) override;
  void offer_relay(const RelayOffer& offer) override;
  AcquireReply acquire(const AcquireRequest& request) override;
  // Plan-based pulls (plan_book.hpp, coordinator_plans.cpp).
  PlanReply plan(const PlanRequest& request) override;
  void complete(const CompleteRequest& request) override;
  void finish(const FinishRequest& request) override;
  std::vector<ModelStatus> status() override;
  std::vector<WorkerStatus> workers() override;
  void attach_snapshot(const std::string& path, const Manifest& manifest) override;
  OffloadLease begin_offload(WorkerId worker, const std::string& model, std::uint64_t version) override;
  void end_offload(WorkerId worker, const std::string& model, std::uint64_t version) override;

  const CoordinatorConfig& config() const { return config_; }

 private:
  // All private helpers expect mu_ held.
  // The registered worker `id`, renewing its lease: every call a worker makes counts as a
  // heartbeat (UnknownWorker if it is not registered).
  const WorkerInfo& alive(WorkerId id);
  // Declares every worker whose lease expired dead (forget_worker). Called by every public call.
  void reap();
  // The one way a worker goes (deregister_worker: kLeft; lease expiry: kDead). Removes its
  // pending shards, the pins of its reads, its reading-group resolutions (finished on its
  // behalf) and the shares of group pulls it would have joined, its slots, seeds, failed pairs,
  // offload lease and ticket. Its held references are erased (kDead) or withdrawn (kLeft: reads
  // already assigned drain; the reference is forgotten once they have).
  void forget_worker(WorkerId id, WorkerState state, const std::string& reason);
  // Gives up `reader`'s share of the group pull `key`: its finish, or a member that will not
  // pull it. Ends its pull of the version if it was active there.
  void release_group_share(GroupReads::Key key, WorkerId reader);
  // The version a group's first resolve picks: the one asked for, or the latest readable one.
  // NotFoundError when there is none (yet).
  std::uint64_t choose_version(const ResolveRequest& r);
  // How long a waiting call sleeps before it reaps again.
  std::chrono::milliseconds reap_tick() const;
  std::uint32_t outstanding(const VersionState& v, const Holder& h) const;
  void forget_if_drained(const std::string& model, std::uint64_t version, WorkerId worker);
  // Forgets withdrawn holders of departed workers that have nothing outstanding, then
  // drops the version if nothing keeps it. O(withdrawn holders): it runs after every read.
  void forget_departed_drained(const std::string& model, std::uint64_t version);
  // Withdrawing `worker`'s reference to `v` now would leave the model without a readable
  // version while a newer one is being published: the withdrawal is deferred (unpublish).
  bool withdrawal_must_wait(const std::string& model, const VersionState& v, WorkerId worker) const;
  // Applies the deferred withdrawals of `model` that no longer need to wait.
  void apply_deferred_withdrawals(const std::string& model);
  bool lease_alive(const VersionState& v) const;
  std::chrono::steady_clock::time_point now() const;
  PlanView plan_view(const VersionState& v) const;
  // complete(): a ChunkResult about a source planned for the reader (not an assigned read).
  void planned_result(VersionState& v, const CompleteRequest& r, const ChunkResult& res);
  // complete(): the plan part (held_ranges, release_sources).
  void complete_plan(VersionState& v, const CompleteRequest& r);

  CoordinatorConfig config_;
  std::shared_ptr<const Planner> planner_;
  Logger log_;
  mutable std::mutex mu_;
  std::condition_variable changed_;
  std::uint64_t ticket_ = 0;  // orders resolutions and withdrawals
  WorkerRegistry workers_;
  Directory directory_;
  GroupReads groups_;
  SourceSlots slots_;  // who each holder serves (K accounting)
};

}  // namespace tensorhub::coord
