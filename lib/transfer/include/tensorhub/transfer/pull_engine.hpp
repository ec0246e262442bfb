// The chunk engine: reads one version's chunks into local buffers, several reads in flight, in
// manifest order so that readers behind this one can relay the prefix it already has (pipelined
// fan-out). Two modes (architecture.md section 3):
//
// Plan mode (EngineOptions::plan, the default; plan_reader.hpp): one Client::plan() call gives
// a source for each run of the wanted chunks. A source with no progress descriptor holds its
// chunks: they are read at once. A relay source may still be pulling them: the engine reads its
// progress bytes one-sidedly (one byte per chunk, set once the relay verified that chunk), reads
// the chunks marked held and reads the progress again after a short backoff. The coordinator is
// asked again only on exceptions: a failed read, a checksum mismatch or a source that showed no
// progress for EngineOptions::stall_timeout is reported (ChunkResult ok=false) and the remaining
// chunks of that source planned again with it excluded; `waiting` chunks are planned again after
// a pause; `unavailable` ones end the pull (ChunksUnavailable). complete() reports the chunks held
// as runs each quarter of the pull and at its end, and releases sources the reader is done with;
// when the pull ends every source is released. A coordinator without plans (PlanUnsupported on
// the first call) or plan = false: acquire mode.
//
// Acquire mode, per chunk: acquire (batched) -> post read -> completion -> verify the checksum ->
// report complete (which releases the holder's pin and, with relay on, makes this reader a
// holder of the chunk).
//
// Both modes: the engine sets this reader's own progress byte of a chunk (EngineOptions::
// progress_bytes, release store) only after the chunk's bytes landed and verified, so a follower
// that reads the byte and then the chunk sees the chunk.
//
// A failed read, or one whose bytes fail their checksum, is reported at once and the
// chunk asked for again, so another holder serves it (the coordinator never assigns that holder
// to this reader again); a bad source is logged once. Only when no good holder is left for a
// chunk that was read corrupt does the pull fail, with ChunksCorrupt. The engine never returns with a pin held, nor
// with a read in flight unless the pull's deadline passed: after an error it waits for the reads in flight until the
// deadline (at least 1 s, or the whole deadline if shorter, after the error); reads still in flight then are abandoned,
// reported as failed and named in a TimeoutError (their buffers may still be written). The coordinator's assignments
// (and plans) are checked: one for a chunk this pull did not ask for, or already reads, is a TransportError naming it.
// Acquire mode reports completions in batches (half the in-flight window), except with relay on: then every poll that
// completed chunks is reported at once, so that they become relay sources without delay.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "tensorhub/coord/client.hpp"
#include "tensorhub/core/error.hpp"
#include "tensorhub/core/log.hpp"
#include "tensorhub/core/manifest.hpp"
#include "tensorhub/core/trace.hpp"
#include "tensorhub/transfer/box_runs.hpp"
#include "tensorhub/transport/transport.hpp"

namespace tensorhub::device {
class Device;
}

namespace tensorhub::transfer {

// Some chunk has no live holder (the coordinator answered `unavailable`). The version may still
// be readable from its snapshot file (ResolveReply::snapshot): the hub falls back to it.
class ChunksUnavailable : public NotFoundError {
 public:
  using NotFoundError::NotFoundError;
};

// Every holder this reader could use for some chunk served bytes that failed its checksum. The
// version may still be readable from its snapshot file: the hub falls back to it, as for
// ChunksUnavailable.
class ChunksCorrupt : public ChecksumError {
 public:
  using ChecksumError::ChecksumError;
};

// Reads were still in flight when the engine gave up waiting for them (the pull's deadline): their
// destination buffers may still be written. Its text keeps the first error's.
class ReadsAbandoned : public TimeoutError {
 public:
  using TimeoutError::TimeoutError;
};

struct Destination {
  std::uint32_t tensor = 0;  // index into Manifest::tensors
  void* data = nullptr;      // at least manifest.tensors[tensor].spec.bytes()
  // kCuda: device memory of EngineOptions::device, written only by the transport (a path that
  // can_read_into device memory) or by host-to-device copies from a bounded bounce ring, and
  // verified on the device (landing.hpp).
  MemoryKind memory = MemoryKind::kHost;
  // Resharding (box_runs.hpp): empty, the whole tensor goes to `data`; otherwise only the bytes
  // these runs name, each to data + Run::dst. Several destinations may name one tensor (two
  // destination boxes that meet one published box). A chunk that one segment holds whole is read
  // straight into place; any other chunk (a box edge, a strided segment, two destinations) is
  // read into a staging slot (one per read in flight), verified there and copied out. Such a pull
  // must not relay (EngineOptions::relay false): its buffers do not hold whole chunks.
  std::vector<Run> runs{};
};

struct EngineOptions {
  bool verify = true;                          // check every chunk's checksum
  bool relay = true;                           // report chunks as held (caller has offered the buffers)
  std::uint32_t inflight = 8;                  // reads in flight
  std::uint32_t acquire_window = 64;           // chunk ids sent per acquire call
  std::chrono::milliseconds deadline{120000};  // whole pull
  // Called from the pulling thread after chunks complete: (bytes done, bytes wanted). May be empty.
  std::function<void(std::uint64_t, std::uint64_t)> progress;
  // Records every read, verification and wait for a source (README "Observability"). May be null.
  TraceRecorder* trace = nullptr;
  // Set by another thread to stop the pull: run() then throws Cancelled once the reads in flight
  // have landed (as after any error). May be null.
  const std::atomic<bool>* cancel = nullptr;
  // Plan-based pulls (Client::plan); false, or a coordinator that does not plan: acquire mode.
  bool plan = true;
  // Plan mode: a relay source whose progress bytes show no new chunk for this long is given up
  // (reported, excluded, its chunks planned again). 0: the deadline / 8, within 100 ms .. 10 s.
  std::chrono::milliseconds stall_timeout{0};
  // Plan mode: first pause before asking again for `waiting` chunks (doubles up to 64 times it).
  std::chrono::milliseconds replan_pause{2};
  // This reader's progress bytes (one per chunk of the manifest, zeroed by the caller; the
  // relay offer's RelayOffer::progress): set to 1 once a chunk is verified. May be null.
  unsigned char* progress_bytes = nullptr;
  // The device of the destinations in device memory (needed only for those). Its stream is
  // synchronized before run() returns or throws.
  device::Device* device = nullptr;
  // Plan mode: threads that verify landed host chunks while the next ones are read (Verifier).
  // 0: on the pulling thread, after each read.
  std::uint32_t verify_threads = 0;
  // Box destinations: a chunk whose bytes all go to one host destination in several pieces is
  // read straight into them where the path can scatter (Transport::can_scatter); false: staged.
  bool scatter_reads = true;
};

struct SourceStats {
  std::uint64_t bytes = 0;
  std::uint32_t chunks = 0;
  bool origin = false;
};

struct PullStats {
  std::uint64_t bytes = 0;
  double seconds = 0;
  std::uint64_t origin_bytes = 0;         // read from publishers
  std::uint64_t relay_bytes = 0;          // read from other readers
  std::uint32_t failed_reads = 0;         // reads that failed and were reassigned
  std::uint32_t checksum_mismatches = 0;  // of those, reads whose bytes failed their checksum
  std::uint32_t acquire_calls = 0;
  std::uint32_t plan_calls = 0;       // plan mode: Client::plan calls (the first one too)
  std::uint32_t complete_calls = 0;   // plan mode: Client::complete calls
  std::uint32_t progress_reads = 0;   // plan mode: reads of relay sources' progress bytes
  std::uint32_t stalls = 0;           // plan mode: sources given up for showing no progress
  bool planned = false;               // the pull ran in plan mode
  double verify_seconds = 0;          // computing checksums (not those the path computed: digested_bytes)
  double no_source_seconds = 0;       // nothing assigned and nothing in flight (waiting for a holder)
  std::uint64_t bounced_bytes = 0;    // device destinations: bytes staged through the host bounce ring
  std::uint64_t staged_bytes = 0;     // box destinations: bytes read into a staging slot and copied out
  std::uint64_t scattered_bytes = 0;  // box destinations: bytes read straight into strided pieces
  std::uint64_t digested_bytes = 0;   // verified by the digest the path computed as it copied (ReadOp::digest)
  std::uint64_t wanted_bytes = 0;     // bytes the destinations asked for (box destinations: their runs)
  std::map<coord::WorkerId, SourceStats> sources;
};

class PullEngine {
 public:
  PullEngine(coord::Client& coordinator, transport::Transport& transport, coord::WorkerId self);

  // Throws ChunksCorrupt (a ChecksumError naming tensor, chunk and holder), ChunksUnavailable (a chunk lost every
  // holder), TimeoutError (deadline), ReadsAbandoned (any error after which reads had to be abandoned: its text keeps
  // the first error's), Cancelled (options.cancel), TransportError (a read failed to start, an unusable assignment).
  PullStats run(const Manifest& manifest, std::span<const Destination> destinations, const EngineOptions& options);

 private:
  coord::Client& coordinator_;
  transport::Transport& transport_;
  coord::WorkerId self_;
  Logger log_;
};

}  // namespace tensorhub::transfer
