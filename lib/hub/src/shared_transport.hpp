// SharedTransport (private header): one rank's data-plane transport, shared by the threads of
// its hub (the caller's thread, the workers of asynchronous pulls). A Transport is for one thread
// at a time and poll() returns every finished read; this wrapper serialises every call under one
// mutex and gives each pull a Lane of its own, whose poll() returns only the reads that lane
// posted (tags are renumbered per lane). The wrapped backend sees one caller at a time from
// varying threads: mpi_rma therefore needs MPI_THREAD_MULTIPLE for pulls from a hub's worker
// threads (Hub::pull_async checks it), ucx and local need nothing more.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "tensorhub/transport/transport.hpp"

namespace tensorhub {

class SharedTransport final : public transport::Transport {
 public:
  explicit SharedTransport(std::unique_ptr<transport::Transport> inner);
  ~SharedTransport() override;

  // A transport of its own for one pull: post/poll/in_flight see that lane's reads only; the
  // rest forwards to the shared transport. Must not outlive it.
  std::unique_ptr<transport::Transport> lane();

  std::string_view name() const override { return inner_->name(); }
  const std::string& endpoint() const override { return inner_->endpoint(); }
  bool reaches(std::string_view endpoint) const override;
  std::unique_ptr<transport::Exposure> expose(std::span<const transport::MemoryRange> ranges) override;
  bool can_expose(const transport::MemoryRange& range) const override;
  bool can_read_into(std::string_view endpoint, std::string_view descriptor, MemoryKind dst) const override;
  bool can_scatter(std::string_view endpoint, std::string_view descriptor) const override;
  // Lane 0's reads.
  void post(const transport::ReadOp& op) override { post_on(0, op); }
  void poll(std::vector<transport::Completion>& out) override { poll_on(0, out); }
  std::size_t in_flight() const override { return in_flight_on(0); }
  void* allocate(std::uint64_t bytes) override;
  void deallocate(void* p) override;
  void close() override;
  bool job_barrier() override;

  void post_on(std::uint64_t lane, const transport::ReadOp& op);
  void poll_on(std::uint64_t lane, std::vector<transport::Completion>& out);
  std::size_t in_flight_on(std::uint64_t lane) const;
  // Forgets what lane `lane` still had queued (its pull is over).
  void drop_lane(std::uint64_t lane);

 private:
  struct Owner {
    std::uint64_t lane = 0;
    std::uint64_t tag = 0;  // the lane's own tag
  };
  // Moves the backend's finished reads to their lanes' queues. Expects mu_ held.
  void collect_locked();

  std::unique_ptr<transport::Transport> inner_;
  mutable std::mutex mu_;
  std::uint64_t next_tag_ = 1;
  std::uint64_t next_lane_ = 1;
  std::unordered_map<std::uint64_t, Owner> owners_;                     // backend tag -> lane's read
  std::map<std::uint64_t, std::vector<transport::Completion>> queues_;  // finished, not polled yet
  std::vector<transport::Completion> scratch_;
};

}  // namespace tensorhub
