// The reader side of CmaTransport: a queue of posted reads served by a small pool of worker
// threads, and the completions they leave for poll(). post() only validates and queues (plus a
// pidfd_open the first time a holder is seen), so it never waits for a copy.
//
// Each read is copied in chunks of `chunk` bytes (one process_vm_readv per chunk, the holder's
// generation word read in the same call, after the data). A read that asks for a digest
// (ReadOp::digest) is copied in parts of `digest` bytes instead, each hashed (ChecksumStream)
// right after its call, while it is in cache; the completion carries the digest. A scattered
// read (ReadOp::pieces) is copied in parts of `bounce` bytes into the worker's bounce buffer (one
// contiguous call, small enough to stay in the core's cache), hashed there if asked, and its
// pieces streamed out to the destination (stream_copy: no read-for-ownership of the short pieces'
// cache lines); only bytes read under the expected generation are copied out. Before the first
// byte is read the generation is checked alone (a withdrawn exposure is never read); around each
// chunk the holder's pidfd is polled and the deadline checked. A read completes with ok=false, and
// a message naming the holder and the cause, when the holder exited (and every later read of it
// fails at once), its exposure was withdrawn, its memory was unmapped, the kernel refused the
// read (permissions), or the deadline passed. Thread-safe (one mutex for the queue, the
// completions and the holder table).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "codec.hpp"
#include "holder.hpp"
#include "tensorhub/core/checksum.hpp"
#include "tensorhub/transport/transport.hpp"

namespace tensorhub::transport::cma {

class Reads {
 public:
  using Clock = std::chrono::steady_clock;
  struct Blocks {
    std::uint64_t chunk = 0;   // bytes per call
    std::uint64_t digest = 0;  // bytes per call of a read that asks for a digest
    std::uint64_t bounce = 0;  // bytes per call of a scattered read (the bounce buffer)
  };
  Reads(std::uint32_t threads, const Blocks& blocks, std::chrono::milliseconds deadline);
  ~Reads();  // stops the workers after their current chunk; queued reads are dropped
  Reads(const Reads&) = delete;
  Reads& operator=(const Reads&) = delete;

  // `endpoint` decoded, `d` decoded and bounds-checked by the caller.
  void post(const std::string& endpoint_text, const EndpointText& endpoint, const DescriptorText& d, const ReadOp& op);
  void poll(std::vector<Completion>& out);
  std::size_t in_flight() const;

 private:
  struct Job {
    std::shared_ptr<Holder> holder;
    std::uint64_t remote = 0;  // address in the holder
    void* dst = nullptr;
    std::uint64_t length = 0;
    std::vector<Piece> pieces;  // empty: contiguous at dst
    std::optional<ChecksumAlgorithm> digest;
    std::uint32_t slot = 0;
    std::uint64_t generation = 0;
    std::uint64_t tag = 0;
    Clock::time_point deadline;
  };

  std::shared_ptr<Holder> holder_for(const std::string& text, const EndpointText& endpoint);
  void work();
  struct PieceCursor {
    std::size_t piece = 0;     // the piece the next byte lands in
    std::uint64_t within = 0;  // bytes of it already written
  };
  // "" when the whole read succeeded, else why not; `sum` (a digest was asked for) fed the bytes;
  // `bounce` is the worker's buffer for scattered reads.
  std::string copy(const Job& job, ChecksumStream* sum, std::vector<unsigned char>& bounce);
  // The next n bytes of a scattered job, read into `from`, streamed out to its pieces.
  static void scatter(const Job& job, const unsigned char* from, std::uint64_t n, PieceCursor& cursor);
  void complete(std::uint64_t tag, std::string error, std::optional<std::uint64_t> digest);

  std::uint64_t chunk_;
  std::uint64_t digest_block_;
  std::uint64_t bounce_block_;
  std::chrono::milliseconds deadline_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::deque<Job> queue_;
  std::size_t running_ = 0;
  std::vector<Completion> done_;
  std::unordered_map<std::string, std::shared_ptr<Holder>> holders_;  // by endpoint text
  std::vector<std::thread> workers_;                                  // last: started last
};

}  // namespace tensorhub::transport::cma
