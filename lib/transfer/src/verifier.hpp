// Verifier (private header): checks landed host chunks against their manifest checksums on
// worker threads, so that verification overlaps the reads of a pull instead of following each
// one on the pulling thread (PlanReader). submit() queues a chunk; collect() hands back the
// chunks checked so far (never blocks); wait_idle() returns once no worker reads a destination
// buffer any more (the pull's error path; the destructor too). With 0 threads nothing is queued:
// the caller verifies inline (async() false).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include "tensorhub/core/checksum.hpp"
#include "tensorhub/transport/transport.hpp"

namespace tensorhub::transfer {

class Verifier {
 public:
  struct Result {
    std::uint32_t chunk = 0;
    bool good = false;
    std::chrono::steady_clock::time_point start{};  // when a worker began the check
    std::chrono::steady_clock::time_point end{};
  };

  explicit Verifier(unsigned threads);
  ~Verifier();
  Verifier(const Verifier&) = delete;
  Verifier& operator=(const Verifier&) = delete;

  bool async() const { return !workers_.empty(); }
  // Queues the check of `length` bytes at `data` (host memory, unchanged until the result is
  // collected or wait_idle() returned) against `expected`. `then` (may be empty) runs on the
  // worker right after a check that passed, before the result is handed back (a staged box
  // chunk's copy to its destinations); an exception from it counts the chunk as bad.
  void submit(std::uint32_t chunk, const unsigned char* data, std::uint64_t length, ChecksumAlgorithm algorithm,
              std::uint64_t expected, std::function<void()> then = {});
  // The same for a chunk that landed scattered: its bytes are the pieces at `base`, in order.
  void submit(std::uint32_t chunk, const unsigned char* base, std::vector<transport::Piece> pieces,
              ChecksumAlgorithm algorithm, std::uint64_t expected);
  // Appends the results since the last call.
  void collect(std::vector<Result>& out);
  // Submitted and not collected yet.
  std::size_t pending() const;
  // Drops what is queued and waits for the checks in progress; their results are discarded.
  void wait_idle() noexcept;

 private:
  struct Task {
    std::uint32_t chunk;
    const unsigned char* data;
    std::uint64_t length;
    ChecksumAlgorithm algorithm;
    std::uint64_t expected;
    std::function<void()> then;
    std::vector<transport::Piece> pieces;  // empty: [data, + length)
  };
  void work();

  mutable std::mutex mu_;
  std::condition_variable cv_;       // tasks queued, or stopping
  std::condition_variable idle_cv_;  // a check ended
  std::deque<Task> queue_;
  std::vector<Result> done_;
  std::size_t running_ = 0;
  std::size_t pending_ = 0;  // queued + running + done, not collected
  bool stop_ = false;
  std::vector<std::thread> workers_;
};

// The checksum of a scattered chunk's pieces at `base`, in order.
std::uint64_t scattered_checksum(ChecksumAlgorithm algorithm, const unsigned char* base,
                                 std::span<const transport::Piece> pieces);

}  // namespace tensorhub::transfer
