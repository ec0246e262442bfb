// Messages between workers and the coordinator. The same structs are used in-process
// (Coordinator implements Client directly) and over gRPC (share/proto/tensorhub.proto mirrors
// them one to one; grpc_codec.cpp converts).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tensorhub/core/manifest.hpp"

namespace tensorhub::coord {

using WorkerId = std::uint64_t;

// Where a worker runs and how to reach its memory.
struct WorkerInfo {
  std::string endpoint;   // Transport::endpoint()
  std::string transport;  // "mpi_rma", "local", ...
  std::string host;
  std::string rack;        // TENSORHUB_RACK or the topology file, may be empty
  std::string dc;          // TENSORHUB_DC or the topology file, may be empty
  std::int32_t rank = -1;  // rank in the job communicator, -1 if none
  std::int32_t numa = -1;  // NUMA node of the process's CPU binding, -1 if unknown
  std::int32_t gpu = -1;   // TENSORHUB_GPU, -1 if unknown (topo::Labels)
};

// The model-parallel group a call is made on behalf of: `size` ranks, this is `rank`.
// Publishing groups commit a version once all `size` shards are registered; reading groups
// resolve `latest` once for all `size` ranks (per pull sequence number).
struct Group {
  std::string name;
  std::uint32_t size = 1;
  std::uint32_t rank = 0;
};

struct PublishRequest {
  WorkerId worker = 0;
  std::string model;
  std::uint64_t version = 0;
  std::uint64_t chunk_bytes = kDefaultChunkBytes;
  Group group;
  ShardManifest shard;               // shard.shard == group.rank
  std::vector<std::string> regions;  // one Exposure descriptor per shard tensor
};

struct PublishReply {
  bool committed = false;  // true when this shard completed the version
};

struct ResolveRequest {
  WorkerId reader = 0;
  std::string model;
  std::optional<std::uint64_t> version;  // nullopt = latest
  Group group;
  // Ignored (kept for wire compatibility). The coordinator numbers each reading group's pulls
  // itself: a worker's next resolve joins the group's pull number (its successful resolves for
  // (model, group) + 1), see ResolveReply::seq.
  std::uint64_t seq = 0;
};

struct ResolveReply {
  // manifest->version is the version resolved. Shared with the coordinator's directory and never
  // null in a reply: versions are immutable, so R readers resolving one version cost no copy.
  std::shared_ptr<const Manifest> manifest;
  std::string snapshot;  // the snapshot file backing that version, empty if none
  std::uint64_t seq = 0;
};

// The reader offers its destination buffers as relay sources (one descriptor per manifest
// tensor it pulls, empty for tensors it does not pull).
struct RelayOffer {
  WorkerId reader = 0;
  std::string model;
  std::uint64_t version = 0;
  std::vector<std::string> regions;  // indexed like Manifest::tensors
  // Descriptor of the reader's progress bytes (one byte per chunk of the version, nonzero once
  // that chunk is verified and held), exposed on its transport: readers planned behind it read
  // them one-sidedly to learn what it has without asking the coordinator. Empty: none.
  std::string progress{};
};

// A run of chunk ids [first, first + count).
struct ChunkRange {
  std::uint32_t first = 0;
  std::uint32_t count = 0;

  bool operator==(const ChunkRange&) const = default;
};

// Plan-based pulls (architecture.md section 3). Instead of asking for a source chunk by chunk,
// a reader asks once for a plan: a source for each run of the chunks it wants, chosen by
// topology, forming relay trees rooted at the publishers. A planned source may not hold its
// chunks yet (a relay still pulling them): the reader reads the source's progress bytes to see
// which it has. The reader asks again only on exceptions: a source failed, stalled or left
// (`exclude` it), chunks were `waiting`, or the plan is exhausted.
struct PlanRequest {
  WorkerId reader = 0;
  std::string model;
  std::uint64_t version = 0;
  std::vector<ChunkRange> chunks;  // still needed, in wanted order
  std::vector<WorkerId> exclude;   // sources that failed or stalled for this reader
};

struct PlanSource {
  WorkerId holder = 0;
  std::string endpoint;
  std::vector<std::string> regions;  // indexed like Manifest::tensors; empty where it holds none
  // Descriptor of the holder's progress bytes (RelayOffer::progress); empty when the holder
  // already holds every chunk planned from it (a publisher, a relay that finished).
  std::string progress{};
  bool origin = false;
  std::uint32_t depth = 0;  // relay depth: 0 = publisher, 1 = reads from a publisher, ...
  // The holder runs on the reader's host (same dc, rack and host labels): its reads go over the
  // host's interconnect (NVLink, shared memory), not the reader's NIC. The reader keeps reads in
  // flight on both kinds of sources at once (PlanReader).
  bool same_host = false;
};

struct PlanStep {
  ChunkRange range;
  std::uint32_t source = 0;  // index into PlanReply::sources
};

struct PlanReply {
  // Each source is pinned for this reader (unpublish waits) until the reader releases it
  // (CompleteRequest::release_sources) or finishes the pull.
  std::vector<PlanSource> sources;
  std::vector<PlanStep> steps;          // in the order asked for
  std::vector<ChunkRange> waiting;      // no source can be planned now: ask again later
  std::vector<ChunkRange> unavailable;  // the pull cannot get these
};

struct AcquireRequest {
  WorkerId reader = 0;
  std::string model;
  std::uint64_t version = 0;
  std::vector<std::uint32_t> chunks;  // global chunk ids still needed, in wanted order
  std::uint32_t max_assign = 16;
};

struct Assignment {
  std::uint32_t chunk = 0;
  WorkerId holder = 0;
  std::string endpoint;
  std::string region;
  std::uint64_t offset = 0;  // byte offset of the chunk inside `region`
  bool origin = false;       // holder is a publisher (not a relaying reader)
};

struct AcquireReply {
  std::vector<Assignment> assignments;
  // Chunks that no holder has at all (the version lost its holders): the pull cannot finish.
  std::vector<std::uint32_t> unavailable;
};

struct ChunkResult {
  std::uint32_t chunk = 0;
  WorkerId holder = 0;
  bool ok = true;
};

struct CompleteRequest {
  WorkerId reader = 0;
  std::string model;
  std::uint64_t version = 0;
  std::vector<ChunkResult> results;     // releases these assignments' pins
  std::vector<std::uint32_t> now_held;  // verified chunks the reader now serves (relay)
  // Plan-based pulls: verified chunks now held, as runs (reported a few times per pull, not per
  // chunk), and planned sources this reader no longer reads from (their pins are released).
  std::vector<ChunkRange> held_ranges{};
  std::vector<WorkerId> release_sources{};
};

struct FinishRequest {
  WorkerId reader = 0;
  std::string model;
  std::uint64_t version = 0;
  Group group;
  std::uint64_t seq = 0;  // ResolveReply::seq of the pull being finished
};

// One holder (reference) of a version, as `tensorhub status` shows it.
struct HolderStatus {
  WorkerId worker = 0;
  std::string host;        // empty once the worker has deregistered
  std::int32_t rank = -1;  // rank in its job communicator, -1 if none or unknown
  bool origin = false;     // publisher of a shard (not a relaying reader)
  bool withdrawn = false;  // unpublished, waiting for its reads to drain
  std::uint32_t pins = 0;  // reads in flight from it
  std::uint64_t chunks_held = 0;
  std::uint64_t chunks_total = 0;  // chunks of the version
};

// The reader that seeds datacenter `dc` with a version: the one reader there allowed to read
// chunks across the WAN from another DC (planner.hpp).
struct WanSeed {
  std::string dc;
  WorkerId worker = 0;

  bool operator==(const WanSeed&) const = default;
};

// A global tensor of a committed version (resharding): its name, dtype and global shape as a
// plain spec, and how many published boxes tile it.
struct GlobalTensorStatus {
  TensorSpec tensor;
  std::uint32_t boxes = 0;
  bool operator==(const GlobalTensorStatus&) const = default;
};

struct VersionStatus {
  std::uint64_t version = 0;
  bool committed = false;
  bool readable = false;  // from live holders, or from its snapshot file
  std::uint32_t retained = 0;
  std::uint32_t holders = 0;         // live (not withdrawn) holders
  std::uint32_t origin_holders = 0;  // live publishers
  std::uint32_t pins = 0;
  std::uint64_t bytes = 0;
  std::string snapshot;                              // path of the snapshot file backing it, empty if none
  std::vector<HolderStatus> holder_list;             // every holder, withdrawn ones included
  std::vector<WanSeed> wan_seeds{};                  // live seed of each DC that has one, by dc
  std::uint32_t tensors = 0;                         // published tensors of the committed version
  std::vector<GlobalTensorStatus> global_tensors{};  // its sliced global tensors, in manifest order
};

// Answer to Client::begin_offload (see the offload-lease design in coordinator.hpp).
enum class OffloadState : std::uint8_t {
  kWrite,  // the caller holds the offload lease: write the snapshot, attach_snapshot, unpublish
  kWait,   // another worker (`holder`) is writing it: keep your reference, retry unpublish later
  kDone,   // nothing to write (snapshot attached, released, or another holder exists): unpublish
};

struct OffloadLease {
  OffloadState state = OffloadState::kDone;
  WorkerId holder = 0;  // the worker holding the lease (kWrite: the caller; kWait: the writer)
};

// Liveness of a worker, as the coordinator sees it (liveness.hpp).
enum class WorkerState : std::uint8_t {
  kAlive,    // heard from within the lease
  kSuspect,  // silent for over half the lease, or a reader's read from it failed since it was
             // last heard from: no new reads are assigned to it
  kDead,     // its lease expired: its references, pins and slots were removed
  kLeft,     // deregistered
};

// One worker in `tensorhub status`: every registered worker, and the ones that went recently.
struct WorkerStatus {
  WorkerId worker = 0;
  WorkerInfo info;
  WorkerState state = WorkerState::kAlive;
  std::uint64_t silent_ms = 0;  // since last heard from (alive, suspect) or since it went (dead, left)
  std::string reason;           // why it is suspect, dead or gone; empty when alive
};

struct HeartbeatReply {
  std::uint64_t lease_ms = 0;  // the coordinator's lease; 0 = leases are off (no expiry)
};

struct ModelStatus {
  std::string model;
  std::vector<VersionStatus> versions;
};

}  // namespace tensorhub::coord
