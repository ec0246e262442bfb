// Hub internals: what one rank owns after joining (private header).
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "heartbeat.hpp"
#include "tensorhub/coord/client.hpp"
#include "tensorhub/coord/coordinator.hpp"
#include "tensorhub/coord/grpc_server.hpp"
#include "tensorhub/core/log.hpp"
#include "tensorhub/hub.hpp"
#include "tensorhub/mpi/mpi.hpp"
#include "tensorhub/snapshot/snapshot.hpp"
#include "tensorhub/transport/factory.hpp"
#include "tensorhub/transport/transport.hpp"

namespace tensorhub {

struct ByteRange {
  std::uintptr_t begin = 0;
  std::uintptr_t end = 0;
  bool overlaps(const ByteRange& o) const { return begin < o.end && o.begin < end; }
};

// A reference this rank serves: a published shard, or the buffers of a pull it relays.
struct Reference {
  std::string model;
  std::uint64_t version = 0;
  std::unique_ptr<transport::Exposure> exposure;
  std::vector<ByteRange> ranges;
  bool origin = true;
  std::vector<Tensor> tensors;  // the memory referenced, by tensor (what an offload copies)
  // What re-creates the reference at a coordinator that lost it (rebuild.cpp): the publish
  // request of an origin; the relay offer's regions and the chunks held of a relay.
  coord::PublishRequest request{};
  std::vector<std::string> relay_regions{};
  std::vector<std::uint32_t> held{};
  bool restored = true;  // known to the current coordinator
  std::uint32_t restore_attempts = 0;
};

class Hub::Impl {
 public:
  Impl(MPI_Comm comm, HubOptions options);

  void publish(const std::string& model, std::uint64_t version, std::span<const Tensor> tensors,
               const std::optional<Group>& group);
  void unpublish(const std::string& model, std::uint64_t version);
  void attach_snapshot(const std::string& path);
  PullResult pull(const std::string& model, const Version& version, std::span<const Tensor> into,
                  const PullOptions& options);
  Manifest manifest(const std::string& model, const Version& version);
  void close();
  // Local teardown without collectives (for a rank that is failing alone).
  void abandon() noexcept;

  // Runs `f` with the API mutex held, registered at the coordinator: after a lost registration
  // (lease expired, standby took over) it re-registers and re-publishes first, and retries `f`
  // once when `f` itself meets UnknownWorker.
  template <class F>
  auto registered(F&& f) -> decltype(f()) {
    std::lock_guard lock(api_mu_);
    if (heartbeat_ && heartbeat_->lost()) rebuild_locked();
    try {
      return f();
    } catch (const UnknownWorker& e) {
      log_.warn(std::string("re-registering: ") + e.what());
      rebuild_locked(true);
      return f();
    }
  }

  coord::Client& client() { return *client_; }
  transport::Transport& transport() { return *transport_; }
  int rank() const { return rank_; }
  bool runs_coordinator() const { return coordinator_ != nullptr; }
  const std::string& address() const { return address_; }
  bool closed() const { return closed_; }

 private:
  void start_control_plane();
  // Registers again and re-creates this worker's references (`force`: even if the heartbeat
  // thread has not noticed the loss). Expects api_mu_ held. rebuild.cpp.
  void rebuild_locked(bool force = false);
  // From the heartbeat thread: rebuild_locked if the API mutex is free; false if it was busy.
  bool try_rebuild();
  bool restore_pending() const;
  // Re-creates one reference at the coordinator; false if the coordinator cannot take it yet
  // (a relay of a version no origin has re-published).
  bool restore(Reference& ref);
  // Withdraws `ref` at the coordinator and waits until no read of it is in flight.
  void withdraw(const Reference& ref);
  // withdraw(), offloading the version to a snapshot first when the coordinator requires it
  // (OffloadRequired): takes part in the offload lease protocol (coordinator.hpp).
  void withdraw_or_offload(const Reference& ref);
  // Collects the whole version (ref's own tensors from memory, the rest by pulling), writes
  // <snapshot_dir>/<model>/v<version>.h5 and attaches it. Called with the offload lease held.
  void offload(const Reference& ref);
  // Reads `into` from the snapshot file of `m`; returns the bytes read.
  std::uint64_t read_snapshot(const std::string& path, const Manifest& m, std::span<const Tensor> into, bool verify,
                              const std::string& why, const snapshot::Progress& progress = {});
  void withdraw_relays_overlapping(const std::vector<ByteRange>& ranges);
  coord::Group group_or_solo(const std::optional<Group>& g, const char* prefix) const;

  HubOptions options_;
  mpi::Comm comm_;
  int rank_ = 0;
  Logger log_;
  std::unique_ptr<coord::Coordinator> coordinator_;
  std::unique_ptr<coord::GrpcServer> server_;
  std::unique_ptr<coord::Client> remote_;
  coord::Client* client_ = nullptr;
  std::string address_;
  std::unique_ptr<transport::Transport> transport_;
  std::atomic<coord::WorkerId> self_{0};
  coord::WorkerInfo info_;
  // Serialises the API (one user thread) with the heartbeat thread's rebuilds.
  std::mutex api_mu_;
  std::atomic<std::uint32_t> pending_restores_{0};
  std::vector<Reference> references_;
  std::map<std::pair<std::string, std::string>, std::uint64_t> pull_seq_;
  std::uint64_t manifest_calls_ = 0;
  bool closed_ = false;
  std::unique_ptr<HeartbeatThread> heartbeat_;  // last: stopped before anything it uses goes
};

using transport::make_transport;  // tensorhub/transport/factory.hpp

}  // namespace tensorhub
