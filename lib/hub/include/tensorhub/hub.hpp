// TensorHub public API: the only header a trainer or rollout worker includes.
//
// A Hub looks like a store of weight versions but keeps no copy of any weight
// (Reference-Oriented Storage). publish() registers *references* to the caller's memory;
// pull() reads a version directly from whichever processes hold it (publishers, or readers that
// pulled it before and relay it), chunk by chunk, verified by per-chunk XXH3-64 checksums.
//
// Threads: every call may be made from any thread, concurrently. One API mutex guards this
// rank's references; a pull holds it only to resolve, check and offer its buffers and to record
// the result, never during the transfer, so pulls (pull, pull_async) run in parallel with each
// other and with every other call. unpublish, deallocate, stop_relaying and close hold it while
// they wait for readers; close() cancels the asynchronous pulls and waits for the others first.
//
// Contracts:
//  * Versions are immutable. Memory passed to publish() must not change until unpublish()
//    returns; unpublish() blocks until every read of that memory has finished.
//  * A version becomes visible when every shard of its publishing group is published.
//  * pull(latest) by every rank of a reading group returns one version for the whole group.
//  * A reader relays what it pulled (unless PullOptions::relay is false) until its next pull
//    into the same buffers, deallocate() of them, stop_relaying(), or close(); TensorHub
//    withdraws that reference before it writes the buffers again. Buffers the caller reuses
//    for anything else must be passed to stop_relaying() first.
//  * After close() every call throws HubClosed (rank(), runs_coordinator() and
//    coordinator_address() excepted); close() again does nothing.
//
// Example (trainer rank and rollout rank in one MPI job):
//   tensorhub::HubOptions opt; opt.pool_bytes = 2ull << 30;          // registered memory
//   auto hub = tensorhub::Hub::join(MPI_COMM_WORLD, opt);            // collective
//   void* w = hub->allocate(bytes);  ... build Tensor views over w ...
//   hub->publish("policy", step, tensors, tensorhub::Group::of(trainer_comm, "trainer"));
//   auto r = hub->pull("policy", tensorhub::Version::latest(), my_buffers);   // on a rollout
//   hub->unpublish("policy", step - 1);                               // on the trainer
#pragma once

#include <mpi.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "tensorhub/core/error.hpp"
#include "tensorhub/core/manifest.hpp"
#include "tensorhub/core/tensor.hpp"
#include "tensorhub/hub_status.hpp"

namespace tensorhub {

struct HubOptions {
  // Coordinator address host:port, or "primary:port,standby:port" (failover: README "Failure
  // model"). Empty: TENSORHUB_HUB if set, else rank 0 of the joining communicator starts a
  // coordinator (lease 5 s) and broadcasts its address. The hub heartbeats its lease from a
  // thread; if the coordinator forgets this worker (lease expired, standby took over) it
  // registers again and re-publishes what it holds. Every rank, the one running the
  // coordinator too, reaches it over gRPC. (A set but malformed TENSORHUB_* variable read for
  // an option left empty is a UserError naming the variable, on every rank.)
  std::string hub_address;
  // Data paths (README "Data paths"): "auto" = every path that serves other processes (mpi_rma
  // for the ranks of this job, ucx for any process, when built); or a comma-separated subset of
  // "mpi_rma", "ucx", "local" (single-process use). Each reader uses the best path per holder.
  std::string transport = "auto";
  // Bytes of registered memory this rank owns (MPI_Win_allocate); tensors to publish or pull
  // into then come from allocate(). 0 = TENSORHUB_POOL_BYTES if set, else a dynamic window
  // that exposes any memory (unreliable on Open MPI 4.1.x with several publishers; README).
  std::uint64_t pool_bytes = 0;
  std::uint64_t chunk_bytes = kDefaultChunkBytes;
  std::uint32_t max_readers_per_source = 2;  // used by a coordinator this hub starts
  // Used by a coordinator this hub starts: GPUs (NICs) per host for rail-aware plans
  // (CoordinatorConfig::plan_rails; workers name their GPU with TENSORHUB_GPU). 1: no rails.
  std::uint32_t plan_rails = 1;
  // Used by a coordinator this hub starts: children per source and stripe of a plan
  // (CoordinatorConfig::plan_fanout; at most max_readers_per_source). 1: relay chains.
  std::uint32_t plan_fanout = 1;
  std::uint32_t inflight = 8;  // reads in flight per pull
  // Threads a pull verifies landed chunks on while it reads the next ones (plan mode, host
  // destinations). -1: min(3, CPUs in the affinity mask - 1), so a rank bound to one core
  // verifies on the pulling thread; 0: always on the pulling thread.
  int verify_threads = -1;
  // Threads one publish computes its per-chunk checksums on. 0: min(4, CPUs in this process's
  // affinity mask): a rank bound to one core (mpirun's default binding) hashes on one.
  std::uint32_t hash_threads = 0;
  // Plan-based pulls (share/doc/architecture.md section 3): one plan per pull from the coordinator, relay
  // progress learnt from the relays' progress bytes. false (or TENSORHUB_PLAN=0, read when this
  // is true), or a coordinator that does not plan: chunk-by-chunk acquire.
  bool plan = true;
  // Box pulls (README "Resharding"): a chunk whose bytes all go to one host destination, strided
  // (a row-parallel box), is read straight into its rows where the data path can scatter a read
  // (cma: iovecs; mpi_rma: an hvector origin datatype). false (or TENSORHUB_SCATTER_READS=0, read
  // when this is true): such chunks go through a staging slot and are copied out.
  bool scatter_reads = true;
  std::chrono::milliseconds rpc_deadline{10000};
  std::chrono::milliseconds pull_deadline{300000};
  // Where unpublish() (and close()) offload a retained version when this rank is its last
  // holder: <snapshot_dir>/<model>/v<version>.h5. Empty: TENSORHUB_SNAPSHOT_DIR if set, else
  // no offload (such an unpublish throws OffloadRequired).
  std::string snapshot_dir;
  // Chrome trace-event JSON of everything this rank does (control calls, every chunk read and
  // its source, verification, waits), written at close(); open it in ui.perfetto.dev or
  // chrome://tracing (README "Observability"). In a communicator of several ranks each writes
  // <path>.rank<r> (before a ".json" suffix: trace.rank<r>.json). Empty: TENSORHUB_TRACE if
  // set, else no trace.
  std::string trace_path;
  // The device for tensors in device memory (MemoryKind::kCuda; README "Device tensors"):
  // "auto" (cuda when a GPU is visible, else emulated), "cuda" or "emulated" (CPU only, for
  // tests: device addresses the host cannot touch). Set (or TENSORHUB_DEVICE set): made at join
  // and given to the data paths (device IPC); empty and unset: made with "auto" when the first
  // device tensor is published or pulled into. One device per hub.
  std::string device;
  // HOST:PORT where a coordinator this hub starts (rank 0, no hub_address) serves Prometheus
  // metrics (GET /metrics). Empty: TENSORHUB_METRICS if set, else none.
  std::string metrics_address;
};

// The model-parallel group a publish or pull is made for. Every rank of the group makes the
// same calls in the same order; names must be unique within the hub.
struct Group {
  std::string name;
  std::uint32_t size = 1;
  std::uint32_t rank = 0;
  // size and rank from `comm` (no communication).
  static Group of(MPI_Comm comm, std::string name);
};

class Version {
 public:
  static Version latest() { return Version(std::nullopt); }
  static Version exact(std::uint64_t v) { return Version(v); }
  const std::optional<std::uint64_t>& value() const { return v_; }

 private:
  explicit Version(std::optional<std::uint64_t> v) : v_(v) {}
  std::optional<std::uint64_t> v_;
};

struct PullOptions {
  bool verify = true;          // check each chunk's checksum (always on while relaying)
  bool relay = true;           // serve the pulled chunks to later readers
  std::optional<Group> group;  // reading group; default: this rank alone
  // Called on the pulling thread as chunks arrive: (bytes done, bytes wanted). May be empty.
  // (For pull_async that is a hub worker thread: keep it short and thread-safe. It must not call
  // this Hub: it may run with the API mutex held.)
  std::function<void(std::uint64_t done, std::uint64_t total)> progress;
  // Bound on this pull's transfer; TimeoutError when it passes. Empty: HubOptions::pull_deadline.
  std::optional<std::chrono::milliseconds> deadline;
};

struct PullResult {
  std::uint64_t version = 0;
  std::uint64_t bytes = 0;
  double seconds = 0;
  std::uint64_t origin_bytes = 0;  // read from publishers
  std::uint64_t relay_bytes = 0;   // read from other readers
  std::uint32_t failed_reads = 0;
  std::uint64_t file_bytes = 0;   // read from the version's snapshot file (no live holder)
  std::uint64_t local_bytes = 0;  // copied from this rank's own references (published or relayed)
  // Stages (seconds): resolving the version (waits while the reading group's first member
  // fixes it), the chunk transfer (reads, verification, complete calls), within it the time
  // with no source at all (no holder assigned, nothing in flight) and checksum verification.
  // `seconds` counts from after the resolve.
  double resolve_seconds = 0;
  double transfer_seconds = 0;
  double no_source_seconds = 0;
  double verify_seconds = 0;
  // Plan mode (HubOptions::plan): whether the transfer followed a coordinator's plan, and how
  // many plan() calls it made (1 when nothing failed).
  bool planned = false;
  std::uint32_t plan_calls = 0;
  // Destinations in device memory: bytes staged through the host bounce ring (a data path that
  // cannot write device memory itself), the rest was written by the path directly.
  std::uint64_t bounced_bytes = 0;
  // Box destinations (resharding): bytes read into a staging slot, verified there and copied out
  // (chunks at a box's edges, or holding strided segments); the rest landed in place.
  std::uint64_t staged_bytes = 0;
  // Box destinations: bytes read straight into strided pieces of the destination (a chunk of a
  // row-parallel box, on a path that scatters reads: HubOptions::scatter_reads).
  std::uint64_t scattered_bytes = 0;
  // Bytes checked against the digest the data path computed while it copied them (cma: hashed in
  // cache, no second pass over memory); the other checked bytes were hashed after they landed.
  std::uint64_t digested_bytes = 0;
};

// Bytes of an asynchronous pull so far (the whole pull: own copies included once done).
struct PullProgress {
  std::uint64_t done = 0;
  std::uint64_t total = 0;  // 0 until the version is resolved
};

// An asynchronous pull (Hub::pull_async), driven by a worker thread of the hub. Move-only; a
// default-constructed handle is empty (valid() false, every other call a UserError).
// Thread-safe: any thread may wait, poll or cancel.
class PullHandle {
 public:
  class State;  // private to the hub library
  PullHandle() = default;
  explicit PullHandle(std::shared_ptr<State> state);
  PullHandle(PullHandle&&) noexcept;
  // Cancels (and waits for) the pull this handle had, if still running, then takes `other`'s.
  PullHandle& operator=(PullHandle&& other) noexcept;
  PullHandle(const PullHandle&) = delete;
  PullHandle& operator=(const PullHandle&) = delete;
  // A pull still running is cancelled (see cancel()); errors are logged, not thrown.
  ~PullHandle();

  bool valid() const { return state_ != nullptr; }
  // True once the pull ended: done, failed or cancelled. Never blocks.
  bool ready() const;
  // Waits up to `timeout` for the pull to end; returns ready().
  bool wait(std::chrono::milliseconds timeout) const;
  PullProgress progress() const;
  // Waits for the end and returns what pull() would have, or rethrows its exception
  // (Cancelled after cancel(); HubClosed if the hub closed first). May be called again.
  PullResult result() const;
  // Stops the pull and returns once no transfer of it can still write the destination buffers
  // and it holds no pin (its reads in flight land first, bounded by its deadline). What it had
  // announced from the buffers is withdrawn, so the caller may reuse them at once. A pull that
  // already ended is left as it is (its result stays; a finished one keeps relaying). Throws
  // TimeoutError only if reads had to be abandoned at the deadline: the buffers may still be
  // written (a hung transport).
  void cancel();

 private:
  std::shared_ptr<State> state_;
};

// What one rank's publish did (Hub::publish_async's handle; Hub::publish returns it too).
// Times count from the call; `call` is what the caller's thread spent (the trainer's stall).
struct PublishResult {
  bool committed = false;               // this shard was the last of its group: the version is visible
  std::uint64_t bytes = 0;              // bytes of the shard (hashed in place; none copied)
  unsigned hash_threads = 0;            // threads the checksum pass ran on
  std::chrono::microseconds call{0};    // validate, lay out and expose, on the caller's thread
  std::chrono::microseconds hashed{0};  // until every per-chunk checksum was in
  std::chrono::microseconds commit{0};  // until the coordinator accepted the shard
};

// An asynchronous publish (Hub::publish_async): the checksum pass and the coordinator call run
// on a hub worker thread. Move-only; thread-safe. Dropping the handle does not stop the publish
// (its error, if any, is then only logged); an empty handle's calls are UserErrors.
class PublishHandle {
 public:
  class State;  // private to the hub library
  PublishHandle() = default;
  explicit PublishHandle(std::shared_ptr<State> state);
  PublishHandle(PublishHandle&&) noexcept;
  PublishHandle& operator=(PublishHandle&&) noexcept;
  PublishHandle(const PublishHandle&) = delete;
  PublishHandle& operator=(const PublishHandle&) = delete;
  ~PublishHandle();

  bool valid() const { return state_ != nullptr; }
  // True once the publish ended: committed at the coordinator, failed or cancelled.
  bool ready() const;
  // Waits up to `timeout` for the end; returns ready().
  bool wait(std::chrono::milliseconds timeout) const;
  // Waits for the end; returns the result or rethrows the publish's error (Cancelled after
  // cancel() or unpublish(); HubClosed if the hub closed first). May be called again.
  PublishResult result() const;
  // Stops a publish still hashing and returns once nothing of it reads the tensors any more;
  // nothing was registered then (the memory is the caller's again). A publish that already
  // reached the coordinator stays published (unpublish it).
  void cancel();

 private:
  std::shared_ptr<State> state_;
};

class Hub {
 public:
  // Collective over `comm`: creates the data-plane window and connects to (or starts) the
  // coordinator. Throws UserError / TransportError.
  static std::unique_ptr<Hub> join(MPI_Comm comm, HubOptions options = {});
  // Collective over the joining communicator: withdraws this rank's references (waiting for
  // their readers), then frees the window. Prefer close() to see errors. A second close() does
  // nothing; any other call after close() throws HubClosed.
  ~Hub();
  void close();

  Hub(const Hub&) = delete;
  Hub& operator=(const Hub&) = delete;

  // Registers references to `tensors` as this rank's shard of `version`. Copies nothing; the
  // per-chunk checksums are computed in place on up to HubOptions::hash_threads threads. Returns
  // once the coordinator has the shard.
  PublishResult publish(const std::string& model, std::uint64_t version, std::span<const Tensor> tensors,
                        const std::optional<Group>& group = std::nullopt);
  // publish() that returns as soon as the shard is validated and exposed (O(metadata): no byte
  // of the tensors is read on the caller's thread); the checksums and the coordinator call run
  // on a hub worker thread, and the version becomes visible when they are done (the handle's
  // result). The tensors are published from the call on: unchanged until unpublish() returns,
  // not writable by a pull, and unpublish() of a version still hashing cancels its publish.
  // Over mpi_rma it needs MPI_THREAD_MULTIPLE.
  PublishHandle publish_async(const std::string& model, std::uint64_t version, std::span<const Tensor> tensors,
                              const std::optional<Group>& group = std::nullopt);
  // Withdraws this rank's reference and blocks until no read of it is in flight. If the
  // version is retained and this rank is the last holder of some of it (for a publishing group:
  // when every rank unpublishes), the version is first written to a snapshot file under
  // HubOptions::snapshot_dir by exactly one of the leaving ranks and attached, so it stays
  // readable from the file; without a snapshot dir that throws OffloadRequired (release() it
  // first, or set snapshot_dir / TENSORHUB_SNAPSHOT_DIR).
  void unpublish(const std::string& model, std::uint64_t version);
  // The same, waiting at most `timeout` for the reads in flight: TimeoutError then, with the
  // reference withdrawn (no new reads are assigned to it) but still exposed: its memory must stay
  // unchanged; call unpublish again to wait for the rest.
  void unpublish(const std::string& model, std::uint64_t version, std::chrono::milliseconds timeout);
  void retain(const std::string& model, std::uint64_t version);
  void release(const std::string& model, std::uint64_t version);
  // Registers the snapshot file at `path` (its manifest read with snapshot::inspect) as a
  // reference to its version: an existing version must match it; an unknown one is created,
  // readable from the file and retained once (recover after a coordinator restart).
  void attach_snapshot(const std::string& path);

  // Fills `into` (a subset of the version's tensors, matched by name; dtype and shape must
  // match) and returns what was read. A version some of whose chunks have no live holder is
  // read from its snapshot file (PullResult::file_bytes), if it has one. Tensors this rank holds
  // itself (it published them, or relays them from an earlier pull of the version into other
  // buffers) are copied from its own memory (PullResult::local_bytes; verified if
  // options.verify) and not offered for relay again; a publisher of the version relays nothing
  // of it. One version may be pulled in several calls into different buffers.
  // Model, tensor and group names must pass validate_name (tensorhub/core/validate.hpp).
  PullResult pull(const std::string& model, const Version& version, std::span<const Tensor> into,
                  const PullOptions& options = {});
  // pull(), started on a worker thread of the hub; returns at once (validation errors of the
  // call itself are thrown here). Several pulls may run at a time (other models, or one model
  // into other buffers: destinations overlapping a pull in flight are a UserError), and every
  // other call may be made meanwhile. The destination buffers belong to the pull until the
  // handle is ready() or cancel() returns. A reading group's ranks each call it (same order as
  // their other pulls of the group): they get one version, also if some of them cancel.
  // Double buffering (prefetch): pull the next version into a spare buffer set while computing
  // with the current one, which keeps relaying the version it holds; swap at a step boundary
  // (README "Asynchronous pulls and prefetch"). Over mpi_rma it needs MPI_THREAD_MULTIPLE.
  PullHandle pull_async(const std::string& model, const Version& version, std::span<const Tensor> into,
                        const PullOptions& options = {});
  std::optional<std::uint64_t> latest(const std::string& model);
  // Waits until a version newer than `newer_than` (or any, if nullopt) is readable.
  std::optional<std::uint64_t> wait_for(const std::string& model, std::optional<std::uint64_t> newer_than,
                                        std::chrono::milliseconds timeout);
  // The manifest of a readable version (names, dtypes, shapes, checksums).
  Manifest manifest(const std::string& model, const Version& version);
  std::vector<ModelInfo> status();

  // Registered memory for tensors (4 KiB aligned) when the hub has a pool; UserError if not.
  void* allocate(std::uint64_t bytes);
  // Returns memory from allocate(). A relay of a pull into it is withdrawn first, waiting for
  // reads of it in flight (the next owner of the memory may write it at once); memory still
  // published is a UserError (unpublish it first).
  void deallocate(void* p);
  // Device tensors (README "Device tensors"). Memory of this hub's device (HubOptions::device;
  // the emulated one where no GPU exists) for MemoryKind::kCuda tensors, `bytes` long; returned
  // with deallocate() (the same rules as above) or freed at close(). Any existing allocation of
  // that device works for publish and pull too (e.g. a PyTorch tensor's data_ptr on the GPU).
  void* allocate_device(std::uint64_t bytes);
  // Synchronous copy of `bytes` between host and device memory of this hub's device (either
  // side kHost or kCuda), e.g. to fill or inspect device tensors in tests and tools.
  void copy_memory(void* dst, MemoryKind dst_memory, const void* src, MemoryKind src_memory, std::uint64_t bytes);
  // What this hub's device is ("emulated device (no GPU ...)" or the GPU's name); makes it.
  std::string device_name();
  // Stops relaying whatever this rank relays from the memory of `tensors` (withdrawn at the
  // coordinator, waiting for reads of it in flight), for callers that reuse their own buffers
  // for something else. Every relay of the same version stops with it. Memory this rank
  // published is a UserError (unpublish it first); memory relaying nothing is fine.
  void stop_relaying(std::span<const Tensor> tensors);

  int rank() const;
  bool runs_coordinator() const;
  const std::string& coordinator_address() const;

  class Impl;

 private:
  explicit Hub(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tensorhub
