// The coordinator: the hub's directory (models -> versions -> manifests -> references), pins,
// retention, reading-group resolution and source assignment. It stores references, never bytes.
// Its state is soft: everything in it is a copy of what workers hold and can be rebuilt from
// them. Thread-safe; serve it in-process (it implements Client) or over gRPC (GrpcServer).
#pragma once

#include <condition_variable>
#include <map>
#include <mutex>
#include <tuple>

#include "tensorhub/coord/client.hpp"
#include "tensorhub/coord/version_state.hpp"
#include "tensorhub/core/log.hpp"

namespace tensorhub::coord {

struct CoordinatorConfig {
  std::uint32_t max_readers_per_source = 2;  // K: concurrent readers one holder serves
  std::uint32_t max_assign_per_call = 64;    // cap on AcquireRequest::max_assign
};

class Coordinator final : public Client {
 public:
  explicit Coordinator(CoordinatorConfig config = {});

  WorkerId register_worker(const WorkerInfo& info) override;
  void deregister_worker(WorkerId worker) override;
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
  void complete(const CompleteRequest& request) override;
  void finish(const FinishRequest& request) override;
  std::vector<ModelStatus> status() override;

  const CoordinatorConfig& config() const { return config_; }

 private:
  struct GroupRead {
    std::uint64_t version = 0;
    std::uint64_t ticket = 0;
    std::uint32_t finishes_left = 0;
  };
  using GroupKey = std::tuple<std::string, std::string, std::uint64_t>;  // model, group, seq

  // All private helpers expect mu_ held.
  const WorkerInfo& worker(WorkerId id) const;
  VersionState& version_or_throw(const std::string& model, std::uint64_t version);
  std::optional<std::uint64_t> latest_locked(const std::string& model) const;
  std::uint32_t outstanding(const VersionState& v, const Holder& h) const;
  void forget_if_drained(const std::string& model, std::uint64_t version, WorkerId worker);

  CoordinatorConfig config_;
  Logger log_;
  mutable std::mutex mu_;
  std::condition_variable changed_;
  WorkerId next_worker_ = 1;
  std::uint64_t ticket_ = 0;  // orders resolutions and withdrawals
  std::map<WorkerId, WorkerInfo> workers_;
  std::map<std::string, std::map<std::uint64_t, VersionState>> models_;
  std::map<GroupKey, GroupRead> group_reads_;
  std::map<WorkerId, std::map<WorkerId, std::uint32_t>> serving_;  // holder -> reader -> reads
};

}  // namespace tensorhub::coord
