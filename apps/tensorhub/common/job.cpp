#include "common/job.hpp"

#include <cmath>

#include "common/options.hpp"
#include "common/trace_merge.hpp"
#include "tensorhub/core/units.hpp"

namespace tensorhub::cli {

void HubFlags::add_to(boost::program_options::options_description& desc) {
  namespace po = boost::program_options;
  desc.add_options()("hub", po::value(&hub), "coordinator host:port (default: world rank 0 starts one)")(
      "transport", po::value(&transport)->default_value(transport),
      "data paths: auto (every path: mpi_rma within this MPI job, ucx to and from any other process "
      "when built, and with --memory cuda device_ipc and staged; each reader picks the best path per "
      "holder), or a comma-separated subset of mpi_rma, ucx (any job, survives dead holders), cma (same "
      "host only: process_vm_readv, survives dead holders; share/doc/transport-cma.md), device_ipc (device "
      "memory, same host), staged (device memory to any reader through the holder's pinned host ring, "
      "read over cma/ucx; share/doc/transport-device.md), local (one process)")(
      "chunk", po::value(&chunk)->default_value(chunk), "transfer chunk size")(
      "pool", po::value(&pool), "registered memory per rank (default: sized from the model)")(
      "inflight", po::value(&inflight)->default_value(inflight), "reads in flight per pull")(
      "max-readers", po::value(&max_readers)->default_value(max_readers),
      "concurrent readers one source serves (coordinator started here)")(
      "plan-fanout", po::value(&plan_fanout)->default_value(plan_fanout),
      "coordinator started here: children per source and stripe of a plan (1 = chains; at most --max-readers)")(
      "plan-rails", po::value(&plan_rails)->default_value(plan_rails),
      "coordinator started here: GPUs (NICs) per host for rail-aware plans (serve --plan-rails; 1 = none)")(
      "snapshot-dir", po::value(&snapshot_dir), "where a retained version is written when its last holder unpublishes")(
      "deadline", po::value(&deadline_s)->default_value(deadline_s), "seconds a pull may take")(
      "trace", po::value(&trace),
      "write a Chrome trace-event JSON timeline of every rank (control calls, each chunk read and its "
      "source, verification, waits) to this file; open it in ui.perfetto.dev");
}

void HubFlags::check() const {
  if (!hub.empty()) check_host_port("--hub", hub, /*any_port=*/false, /*list=*/true);
  parse_bytes(chunk);
  if (!pool.empty()) parse_bytes(pool);
  if (!(deadline_s > 0) || !std::isfinite(deadline_s))
    throw UserError("--deadline must be a positive number of seconds");
  if (inflight == 0 || max_readers == 0) throw UserError("--inflight and --max-readers must be at least 1");
  if (plan_fanout == 0 || plan_rails == 0) throw UserError("--plan-fanout and --plan-rails must be at least 1");
}

HubOptions HubFlags::to_options(std::uint64_t pool_bytes) const {
  HubOptions o;
  o.hub_address = hub;
  o.transport = transport;
  o.chunk_bytes = parse_bytes(chunk);
  o.pool_bytes = pool.empty() ? pool_bytes : parse_bytes(pool);
  o.inflight = inflight;
  o.max_readers_per_source = max_readers;
  o.plan_fanout = plan_fanout;
  o.plan_rails = plan_rails;
  o.snapshot_dir = snapshot_dir;
  o.trace_path = trace;
  o.device = device;
  o.pull_deadline = std::chrono::milliseconds(static_cast<std::int64_t>(deadline_s * 1000));
  return o;
}

Job join_job(Role role, const HubFlags& flags, std::uint64_t known_model_bytes,
             const std::function<std::uint64_t(std::uint64_t, const mpi::Comm&)>& pool_for) {
  Job job;
  mpi::check(MPI_Comm_rank(MPI_COMM_WORLD, &job.world_rank), "MPI_Comm_rank");
  mpi::check(MPI_Comm_size(MPI_COMM_WORLD, &job.world_size), "MPI_Comm_size");
  job.role = mpi::Comm::split(MPI_COMM_WORLD, static_cast<int>(role), job.world_rank);
  std::uint64_t mine = known_model_bytes;
  mpi::check(MPI_Allreduce(&mine, &job.model_bytes, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD),
             "MPI_Allreduce(model size)");
  std::uint64_t pool = pool_for(job.model_bytes, job.role);
  job.hub = Hub::join(MPI_COMM_WORLD, flags.to_options(pool));
  job.trace = flags.trace;
  return job;
}

void leave_job(Job& job) {
  mpi::sleepy_barrier(MPI_COMM_WORLD, std::chrono::milliseconds(2));
  job.hub->close();
  merge_job_trace(MPI_COMM_WORLD, job.trace);
}

}  // namespace tensorhub::cli
