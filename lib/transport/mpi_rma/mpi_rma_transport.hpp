// `mpi_rma` backend: one MPI dynamic window per hub over the job's communicator, opened with a
// single MPI_Win_lock_all epoch for the hub's lifetime. expose() = MPI_Win_attach (local, no
// collective); a read = MPI_Rget at the holder's attached address, completed with MPI_Testsome.
// Why dynamic windows: publish and relay must not need a collective (readers become holders
// chunk by chunk); see README "Dynamic vs per-publish windows" for the measured cost.
// Failure model: without ULFM, an Rget on a dead rank hangs inside MPI (README "Failure model").
#pragma once

#include <mpi.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tensorhub/mpi/window.hpp"
#include "tensorhub/transport/transport.hpp"

namespace tensorhub::transport {

class MpiRmaTransport final : public Transport {
 public:
  // Collective over `comm`. `job_tag` must be the same on all ranks and differ between jobs.
  MpiRmaTransport(MPI_Comm comm, std::string job_tag);
  ~MpiRmaTransport() override;

  std::string_view name() const override { return "mpi_rma"; }
  const std::string& endpoint() const override { return endpoint_; }
  bool reaches(std::string_view endpoint) const override;
  std::unique_ptr<Exposure> expose(std::span<const MemoryRange> ranges) override;
  void post(const ReadOp& op) override;
  void poll(std::vector<Completion>& out) override;
  std::size_t in_flight() const override { return requests_.size(); }

  // Collective: ends the access epoch and frees the window. Called by the destructor otherwise.
  void close() override;

 private:
  friend class MpiExposure;
  struct Attached {
    std::uint64_t end = 0;
    std::uint32_t refs = 0;
    std::unique_ptr<mpi::Attachment> attachment;
  };
  int target_rank(std::string_view endpoint) const;
  // Attaches [begin, end) or reuses an attachment that contains it; returns its key.
  std::uint64_t attach(std::uint64_t begin, std::uint64_t end);
  void detach(std::uint64_t key) noexcept;

  std::string prefix_;  // "mpi_rma:<job_tag>:"
  std::string endpoint_;
  std::size_t max_attach_;
  mpi::Window window_;                          // declared before attached_: outlives it
  std::map<std::uint64_t, Attached> attached_;  // by begin address
  std::vector<MPI_Request> requests_;
  std::vector<std::uint64_t> tags_;
  std::vector<int> indices_;
};

}  // namespace tensorhub::transport
