// Hub::Impl: the MPI glue around HubCore (private header). It duplicates the joining
// communicator, starts the coordinator on rank 0 when no address is given and broadcasts its
// address and the job tag, creates the transport, and makes join and close collective. Every
// rank reaches the coordinator through a GrpcClient (rank 0 too). Everything else: HubCore.
#pragma once

#include <memory>
#include <string>

#include "coordinator_host.hpp"
#include "hub_core.hpp"
#include "process_hubs.hpp"
#include "tensorhub/coord/grpc_client.hpp"
#include "tensorhub/hub.hpp"
#include "tensorhub/mpi/mpi.hpp"
#include "tensorhub/transport/factory.hpp"
#include "tensorhub/transport/transport.hpp"

namespace tensorhub {

class Hub::Impl {
 public:
  // Collective over `comm`. Reads TENSORHUB_HUB, TENSORHUB_POOL_BYTES and TENSORHUB_SNAPSHOT_DIR
  // for options left empty (UserError naming the variable for a bad value).
  Impl(MPI_Comm comm, HubOptions options);

  // Every Hub call but close goes here (HubCore throws HubClosed once closed or abandoned).
  HubCore& core() { return *core_; }
  // Collective: HubCore::leave, a barrier (no rank frees its memory while another still reads),
  // then the transport and the coordinator go. A second call does nothing.
  void close();
  // Local teardown without collectives (for a rank that is failing alone).
  void abandon() noexcept;

  int rank() const { return rank_; }
  bool runs_coordinator() const { return host_ != nullptr; }
  const std::string& address() const { return address_; }

 private:
  // Collective: UserError on every rank when another hub of this process (on the same
  // coordinator) cannot be reached by `mine` (process_hubs.hpp).
  void refuse_unreachable_neighbours(const transport::Transport& mine);
  mpi::Comm comm_;
  int rank_ = 0;
  std::unique_ptr<CoordinatorHost> host_;  // rank 0 when no address was given
  std::string address_;
  std::unique_ptr<coord::GrpcClient> client_;
  std::unique_ptr<HubCore> core_;  // gone before the client and the coordinator
  bool closed_ = false;
  ProcessHubs::Registration registration_;  // while open: this process's hubs know it
};

using transport::make_transport;  // tensorhub/transport/factory.hpp

}  // namespace tensorhub
