#include "tensorhub/hub.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <exception>
#include <random>
#include <thread>
#include <utility>

#include "hub_impl.hpp"
#include "tensorhub/coord/grpc_client.hpp"
#include "tensorhub/core/units.hpp"
#include "tensorhub/topo/labels.hpp"

namespace tensorhub {
namespace {

std::string env_or(const char* name, std::string fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::string(v) : std::move(fallback);
}

std::string local_hostname() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "localhost";
  return buf;
}

std::string random_tag() {
  std::random_device rd;
  const auto now = static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  const std::uint64_t x = (static_cast<std::uint64_t>(rd()) << 32) ^ rd() ^ now ^ static_cast<std::uint64_t>(getpid());
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(x));
  return buf;
}

}  // namespace

Group Group::of(MPI_Comm comm, std::string name) {
  int r = 0;
  int n = 0;
  mpi::check(MPI_Comm_rank(comm, &r), "MPI_Comm_rank");
  mpi::check(MPI_Comm_size(comm, &n), "MPI_Comm_size");
  return Group{std::move(name), static_cast<std::uint32_t>(n), static_cast<std::uint32_t>(r)};
}

Hub::Impl::Impl(MPI_Comm comm, HubOptions options)
    : options_(std::move(options)), comm_(mpi::Comm::duplicate(comm)), rank_(comm_.rank()), log_("hub") {
  log_ = Logger("hub r" + std::to_string(rank_));
  if (options_.transport == "local" && comm_.size() != 1) {
    throw UserError("transport 'local' only works in a single-process hub; use mpi_rma");
  }
  if (options_.snapshot_dir.empty()) options_.snapshot_dir = env_or("TENSORHUB_SNAPSHOT_DIR", "");
  start_control_plane();
  const std::string job_tag = mpi::bcast_string(comm_.get(), 0, rank_ == 0 ? random_tag() : std::string());
  if (options_.pool_bytes == 0) {
    const auto pool = env_or("TENSORHUB_POOL_BYTES", "");
    if (!pool.empty()) options_.pool_bytes = parse_bytes(pool);
  }
  transport_ = make_transport(options_.transport, comm_.get(), job_tag, rank_, options_.pool_bytes);
  coord::WorkerInfo info;
  info.endpoint = transport_->endpoint();
  info.transport = std::string(transport_->name());
  // dc/rack from TENSORHUB_DC / TENSORHUB_RACK or the TENSORHUB_TOPOLOGY file, numa from the
  // CPU binding, gpu from TENSORHUB_GPU (share/doc/topology.md).
  const auto labels = topo::local_labels();
  info.host = labels.host.empty() ? local_hostname() : labels.host;
  info.rack = labels.rack;
  info.dc = labels.dc;
  info.numa = labels.numa;
  info.gpu = labels.gpu;
  info.rank = rank_;
  info_ = info;
  self_ = client_->register_worker(info);
  log_.info("joined hub " + address_ + " as worker " + std::to_string(self_.load()));
  heartbeat_ = std::make_unique<HeartbeatThread>(
      *client_,
      HeartbeatThread::Hooks{[this] { return self_.load(); }, [this] { return restore_pending(); },
                             [this] { return try_rebuild(); }},
      log_);
}

void Hub::Impl::start_control_plane() {
  std::string address = options_.hub_address.empty() ? env_or("TENSORHUB_HUB", "") : options_.hub_address;
  if (address.empty()) {
    // Rank 0 hosts the coordinator; everyone learns its address by broadcast.
    std::string mine;
    if (rank_ == 0) {
      coord::CoordinatorConfig cfg;
      cfg.max_readers_per_source = options_.max_readers_per_source;
      coordinator_ = std::make_unique<coord::Coordinator>(cfg);
      server_ = std::make_unique<coord::GrpcServer>(*coordinator_, "0.0.0.0:0");
      mine = server_->address_for(local_hostname());
    }
    address = mpi::bcast_string(comm_.get(), 0, mine);
  }
  address_ = address;
  if (coordinator_) {
    client_ = coordinator_.get();
  } else {
    remote_ = std::make_unique<coord::GrpcClient>(address_, options_.rpc_deadline);
    client_ = remote_.get();
  }
}

coord::Group Hub::Impl::group_or_solo(const std::optional<Group>& g, const char* prefix) const {
  if (!g) return coord::Group{std::string(prefix) + std::to_string(self_), 1, 0};
  if (g->name.empty()) throw UserError("group with an empty name");
  if (g->size == 0 || g->rank >= g->size) throw UserError("group '" + g->name + "': rank out of range");
  return coord::Group{g->name, g->size, g->rank};
}

void Hub::Impl::withdraw(const Reference& ref) {
  auto pins = client_->unpublish(self_, ref.model, ref.version);
  const auto start = std::chrono::steady_clock::now();
  auto next_warning = start + std::chrono::seconds(10);
  // At least one wait_drained: it is what makes the coordinator forget the reference.
  for (bool first = true; first || pins > 0; first = false) {
    const auto slice = std::min<std::chrono::milliseconds>(options_.rpc_deadline / 2, std::chrono::milliseconds(1000));
    pins = client_->wait_drained(self_, ref.model, ref.version, slice);
    if (pins > 0 && std::chrono::steady_clock::now() > next_warning) {
      log_.warn("unpublish of '" + ref.model + "' v" + std::to_string(ref.version) + " still waits for " +
                std::to_string(pins) + " reads");
      next_warning += std::chrono::seconds(10);
    }
  }
}

void Hub::Impl::unpublish(const std::string& model, std::uint64_t version) {
  for (auto it = references_.begin(); it != references_.end(); ++it) {
    if (it->origin && it->model == model && it->version == version) {
      withdraw_or_offload(*it);
      references_.erase(it);  // detaches the memory
      return;
    }
  }
  throw NotFoundError("'" + model + "' v" + std::to_string(version) + " is not published by this rank");
}

void Hub::Impl::abandon() noexcept {
  heartbeat_.reset();
  closed_ = true;
  references_.clear();
}

void Hub::Impl::close() {
  if (closed_) return;
  heartbeat_.reset();  // no rebuild may race the teardown
  closed_ = true;
  // Withdraw everything this rank serves, newest first, waiting for its readers (and offloading
  // retained versions this rank is the last holder of).
  std::exception_ptr refused;   // OffloadRequired without a snapshot dir: reported after teardown
  std::vector<Reference> kept;  // still referenced at the coordinator until we deregister
  while (!references_.empty()) {
    try {
      withdraw_or_offload(references_.back());
    } catch (const NotFoundError&) {
      // already gone at the coordinator (e.g. the version was dropped)
    } catch (const OffloadRequired& e) {
      // Leaving anyway (the other ranks wait in the barrier below): the version loses this
      // holder when we deregister.
      log_.error(std::string("close: ") + e.what());
      if (!refused) refused = std::current_exception();
      kept.push_back(std::move(references_.back()));
    }
    references_.pop_back();
  }
  try {
    client_->deregister_worker(self_);
  } catch (const NotFoundError&) {
    // the coordinator forgot us already (lease expired or it was replaced): nothing to undo
  } catch (const TransportError& e) {
    log_.warn(std::string("close: could not deregister: ") + e.what());
  }
  kept.clear();
  // No rank may free the window or stop the coordinator while another still reads. (With ULFM
  // the transport's barrier counts only the live ranks.)
  if (!transport_->job_barrier()) mpi::sleepy_barrier(comm_.get());
  transport_->close();
  transport_.reset();
  remote_.reset();
  if (server_) server_->shutdown();
  if (refused) std::rethrow_exception(refused);
}

Hub::Hub(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

std::unique_ptr<Hub> Hub::join(MPI_Comm comm, HubOptions options) {
  return std::unique_ptr<Hub>(new Hub(std::make_unique<Impl>(comm, std::move(options))));
}

Hub::~Hub() {
  if (std::uncaught_exceptions() > 0) {
    // Unwinding on this rank only: no collective (it could hang); the job is going down.
    impl_->abandon();
    return;
  }
  try {
    close();
  } catch (const std::exception& e) {
    Logger("hub").error(std::string("close failed: ") + e.what());
  }
}

void Hub::close() {
  impl_->registered([&] { impl_->close(); });
}

void Hub::publish(const std::string& model, std::uint64_t version, std::span<const Tensor> tensors,
                  const std::optional<Group>& group) {
  impl_->registered([&] { impl_->publish(model, version, tensors, group); });
}
void Hub::unpublish(const std::string& model, std::uint64_t version) {
  impl_->registered([&] { impl_->unpublish(model, version); });
}
void Hub::retain(const std::string& model, std::uint64_t version) { impl_->client().retain(model, version); }
void Hub::release(const std::string& model, std::uint64_t version) { impl_->client().release(model, version); }
void Hub::attach_snapshot(const std::string& path) {
  impl_->registered([&] { impl_->attach_snapshot(path); });
}

PullResult Hub::pull(const std::string& model, const Version& version, std::span<const Tensor> into,
                     const PullOptions& options) {
  return impl_->registered([&] { return impl_->pull(model, version, into, options); });
}

std::optional<std::uint64_t> Hub::latest(const std::string& model) { return impl_->client().latest(model); }

std::optional<std::uint64_t> Hub::wait_for(const std::string& model, std::optional<std::uint64_t> newer_than,
                                           std::chrono::milliseconds timeout) {
  return impl_->client().wait_for(model, newer_than, timeout);
}

Manifest Hub::manifest(const std::string& model, const Version& version) {
  return impl_->registered([&] { return impl_->manifest(model, version); });
}

std::vector<ModelInfo> Hub::status() {
  std::vector<ModelInfo> out;
  for (const auto& m : impl_->client().status()) {
    ModelInfo mi{m.model, {}};
    for (const auto& v : m.versions) {
      VersionInfo vi;
      vi.version = v.version;
      vi.committed = v.committed;
      vi.readable = v.readable;
      vi.retained = v.retained;
      vi.holders = v.holders;
      vi.origin_holders = v.origin_holders;
      vi.pins = v.pins;
      vi.bytes = v.bytes;
      vi.snapshot = v.snapshot;
      for (const auto& h : v.holder_list) {
        vi.holder_list.push_back(
            HolderInfo{h.worker, h.host, h.rank, h.origin, h.withdrawn, h.pins, h.chunks_held, h.chunks_total});
      }
      mi.versions.push_back(std::move(vi));
    }
    out.push_back(std::move(mi));
  }
  return out;
}

void* Hub::allocate(std::uint64_t bytes) { return impl_->transport().allocate(bytes); }
void Hub::deallocate(void* p) { impl_->transport().deallocate(p); }

int Hub::rank() const { return impl_->rank(); }
bool Hub::runs_coordinator() const { return impl_->runs_coordinator(); }
const std::string& Hub::coordinator_address() const { return impl_->address(); }

}  // namespace tensorhub
