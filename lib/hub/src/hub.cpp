// Hub (the public API) and Hub::Impl (the MPI glue around HubCore).
#include "tensorhub/hub.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <random>
#include <utility>

#include "hub_impl.hpp"
#include "tensorhub/coord/auth.hpp"
#include "tensorhub/core/env.hpp"
#include "tensorhub/core/trace.hpp"
#include "tensorhub/device/device.hpp"

namespace tensorhub {
namespace {

std::string random_tag() {
  std::random_device rd;
  const auto now = static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  const std::uint64_t x = (static_cast<std::uint64_t>(rd()) << 32) ^ rd() ^ now ^ static_cast<std::uint64_t>(getpid());
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(x));
  return buf;
}

// Options left empty, from the environment (share/doc/environment.md).
HubOptions with_environment(HubOptions o) {
  if (o.hub_address.empty()) o.hub_address = env::text("TENSORHUB_HUB").value_or("");
  if (o.pool_bytes == 0) o.pool_bytes = env::bytes("TENSORHUB_POOL_BYTES").value_or(0);
  if (o.snapshot_dir.empty()) o.snapshot_dir = env::text("TENSORHUB_SNAPSHOT_DIR").value_or("");
  if (o.trace_path.empty()) o.trace_path = env::text("TENSORHUB_TRACE").value_or("");
  if (o.metrics_address.empty()) o.metrics_address = env::text("TENSORHUB_METRICS").value_or("");
  if (o.device.empty()) o.device = env::text("TENSORHUB_DEVICE").value_or("");
  if (o.plan) o.plan = env::flag("TENSORHUB_PLAN").value_or(true);
  if (o.scatter_reads) o.scatter_reads = env::flag("TENSORHUB_SCATTER_READS").value_or(true);
  return o;
}

// Whether every rank of `comm` runs on rank 0's host (then the coordinator listens on loopback).
bool single_host(MPI_Comm comm) {
  const auto here = mpi::processor_name();
  int same = mpi::bcast_string(comm, 0, here) == here ? 1 : 0;
  int all = 0;
  mpi::check(MPI_Allreduce(&same, &all, 1, MPI_INT, MPI_LAND, comm), "MPI_Allreduce");
  return all != 0;
}

// Rank 0 starts the coordinator and broadcasts its address and the job's token (over MPI: the
// secret never leaves the job), or why it could not ("!<error>"), so that every rank fails
// alike instead of waiting for an address that never comes. The token is TENSORHUB_TOKEN /
// TENSORHUB_TOKEN_FILE when set (so tools outside the job can call in), else a fresh secret.
std::string start_coordinator(MPI_Comm comm, int rank, const HubOptions& o, std::unique_ptr<CoordinatorHost>& host,
                              std::string& token) {
  const bool one_host = single_host(comm);
  std::string mine;
  if (rank == 0) {
    try {
      coord::CoordinatorConfig cfg;
      cfg.max_readers_per_source = o.max_readers_per_source;
      cfg.plan_rails = o.plan_rails;
      cfg.plan_fanout = o.plan_fanout;
      auto secret = coord::ClientAuth::from_environment().token;
      if (secret.empty()) secret = coord::generate_token();
      host = std::make_unique<CoordinatorHost>(cfg, CoordinatorHost::listen_host(one_host), secret, o.metrics_address);
      mine = host->address() + "\n" + secret;
    } catch (const std::exception& e) {
      mine = std::string("!") + e.what();
    }
  }
  auto address = mpi::bcast_string(comm, 0, mine);
  if (address.starts_with("!")) throw TransportError("could not start the coordinator on rank 0: " + address.substr(1));
  const auto nl = address.find('\n');
  token = address.substr(nl + 1);
  return address.substr(0, nl);
}

}  // namespace

Group Group::of(MPI_Comm comm, std::string name) {
  int r = 0;
  int n = 0;
  mpi::check(MPI_Comm_rank(comm, &r), "MPI_Comm_rank");
  mpi::check(MPI_Comm_size(comm, &n), "MPI_Comm_size");
  return Group{std::move(name), static_cast<std::uint32_t>(n), static_cast<std::uint32_t>(r)};
}

Hub::Impl::Impl(MPI_Comm comm, HubOptions options) : comm_(mpi::Comm::duplicate(comm)), rank_(comm_.rank()) {
  options = with_environment(std::move(options));
  const auto paths = transport::transport_paths(options.transport);
  if (std::find(paths.begin(), paths.end(), "local") != paths.end() && comm_.size() != 1) {
    throw UserError("transport 'local' only works in a single-process hub; use mpi_rma");
  }
  auto auth = coord::ClientAuth::from_environment();
  address_ = options.hub_address.empty() ? start_coordinator(comm_.get(), rank_, options, host_, auth.token)
                                         : options.hub_address;
  const std::string job_tag = mpi::bcast_string(comm_.get(), 0, rank_ == 0 ? random_tag() : std::string());
  // Asked for a device (HubOptions::device, TENSORHUB_DEVICE): made now, for the data paths too.
  std::shared_ptr<device::Device> device = options.device.empty() ? nullptr : device::make_device(options.device);
  auto transport = make_transport(options.transport, comm_.get(), job_tag, rank_, options.pool_bytes, device.get());
  refuse_unreachable_neighbours(*transport);
  client_ = std::make_unique<coord::GrpcClient>(address_, options.rpc_deadline, std::move(auth));
  if (!options.trace_path.empty()) options.trace_path = trace_file_for_rank(options.trace_path, rank_, comm_.size());
  core_ = std::make_unique<HubCore>(*client_, std::move(transport), rank_, std::move(options), std::move(device));
  registration_ = ProcessHubs::of_this_process().add(
      ProcessHubs::Entry{address_, core_->transport().endpoint(), std::string(core_->transport().name())});
}

void Hub::Impl::refuse_unreachable_neighbours(const transport::Transport& mine) {
  std::string why;
  for (const auto& other : ProcessHubs::of_this_process().on(address_)) {
    if (mine.reaches(other.endpoint)) continue;
    why = "this process already has a hub on coordinator " + address_ + " over " + other.paths +
          ", and this one's data paths (" + std::string(mine.name()) +
          ") do not reach it: mpi_rma reaches only the hub's own window (the MPI job it joined with), "
          "and two hubs in one process are two such jobs, so neither could read what the other "
          "publishes. Join once per process (one hub can publish and pull), or give both hubs a path "
          "that reaches across jobs (--transport / TENSORHUB_TRANSPORT with ucx or cma)";
    break;
  }
  // Collective: every rank refuses, or none (a rank alone would leave the others in MPI calls).
  int refused = why.empty() ? 0 : 1;
  mpi::check(MPI_Allreduce(MPI_IN_PLACE, &refused, 1, MPI_INT, MPI_MAX, comm_.get()), "MPI_Allreduce");
  if (refused != 0) {
    throw UserError(why.empty() ? "another rank of this hub's communicator refused the join: its process already "
                                  "has a hub on coordinator " +
                                      address_ + " that this hub's data paths do not reach"
                                : why);
  }
}

void Hub::Impl::close() {
  if (closed_) return;
  closed_ = true;
  registration_ = {};
  auto error = core_->leave();
  // No rank may free the window or stop the coordinator while another still reads. (With ULFM
  // the transport's barrier counts only the live ranks.)
  if (!core_->transport().job_barrier()) mpi::sleepy_barrier(comm_.get());
  core_->release_transport();
  if (host_) host_->shutdown();
  if (error) std::rethrow_exception(error);
}

void Hub::Impl::abandon() noexcept {
  closed_ = true;
  registration_ = {};
  core_->abandon();
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

void Hub::close() { impl_->close(); }

namespace {

// UserError unless MPI provides MPI_THREAD_MULTIPLE where `core` uses mpi_rma: an asynchronous
// call then reaches MPI from a worker thread while the caller's thread may call MPI too.
void require_threads_for_mpi_rma(HubCore& core, const char* what) {
  if (core.closed() || core.transport().name().find("mpi_rma") == std::string_view::npos) return;
  int level = MPI_THREAD_SINGLE;
  mpi::check(MPI_Query_thread(&level), "MPI_Query_thread");
  if (level < MPI_THREAD_MULTIPLE) {
    throw UserError(std::string(what) +
                    " over mpi_rma needs MPI initialised with MPI_THREAD_MULTIPLE (use the synchronous "
                    "call, or MPI_Init_thread(..., MPI_THREAD_MULTIPLE, ...))");
  }
}

}  // namespace

PublishResult Hub::publish(const std::string& model, std::uint64_t version, std::span<const Tensor> tensors,
                           const std::optional<Group>& group) {
  return impl_->core().publish(model, version, tensors, group);
}
PublishHandle Hub::publish_async(const std::string& model, std::uint64_t version, std::span<const Tensor> tensors,
                                 const std::optional<Group>& group) {
  require_threads_for_mpi_rma(impl_->core(), "publish_async");
  return impl_->core().publish_async(model, version, tensors, group);
}
void Hub::unpublish(const std::string& model, std::uint64_t version) { impl_->core().unpublish(model, version); }
void Hub::unpublish(const std::string& model, std::uint64_t version, std::chrono::milliseconds timeout) {
  impl_->core().unpublish(model, version, timeout);
}
void Hub::retain(const std::string& model, std::uint64_t version) { impl_->core().retain(model, version); }
void Hub::release(const std::string& model, std::uint64_t version) { impl_->core().release(model, version); }
void Hub::attach_snapshot(const std::string& path) { impl_->core().attach_snapshot(path); }

PullResult Hub::pull(const std::string& model, const Version& version, std::span<const Tensor> into,
                     const PullOptions& options) {
  return impl_->core().pull(model, version, into, options);
}

PullHandle Hub::pull_async(const std::string& model, const Version& version, std::span<const Tensor> into,
                           const PullOptions& options) {
  require_threads_for_mpi_rma(impl_->core(), "pull_async");
  return impl_->core().pull_async(model, version, into, options);
}

std::optional<std::uint64_t> Hub::latest(const std::string& model) { return impl_->core().latest(model); }

std::optional<std::uint64_t> Hub::wait_for(const std::string& model, std::optional<std::uint64_t> newer_than,
                                           std::chrono::milliseconds timeout) {
  return impl_->core().wait_for(model, newer_than, timeout);
}

Manifest Hub::manifest(const std::string& model, const Version& version) {
  return impl_->core().manifest(model, version);
}

std::vector<ModelInfo> Hub::status() { return impl_->core().status(); }

void* Hub::allocate(std::uint64_t bytes) { return impl_->core().allocate(bytes); }
void Hub::deallocate(void* p) { impl_->core().deallocate(p); }
void* Hub::allocate_device(std::uint64_t bytes) { return impl_->core().allocate_device(bytes); }
void Hub::copy_memory(void* dst, MemoryKind dst_memory, const void* src, MemoryKind src_memory, std::uint64_t bytes) {
  impl_->core().copy_memory(dst, dst_memory, src, src_memory, bytes);
}
std::string Hub::device_name() { return impl_->core().device_name(); }
void Hub::stop_relaying(std::span<const Tensor> tensors) { impl_->core().stop_relaying(tensors); }

int Hub::rank() const { return impl_->rank(); }
bool Hub::runs_coordinator() const { return impl_->runs_coordinator(); }
const std::string& Hub::coordinator_address() const { return impl_->address(); }

}  // namespace tensorhub
