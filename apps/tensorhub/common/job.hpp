// How the MPI commands (publish, pull, snapshot save/load) share one job.
//
// Several commands may run in one MPI job, MPMD style:
//   mpirun -n 2 tensorhub publish ... : -n 4 tensorhub pull ...
//   srun --multi-prog layout.conf        (the same under Slurm)
// Every rank then makes the same collective calls in the same order:
//   1. split MPI_COMM_WORLD by role (the ranks running the same command form its group);
//   2. agree on the model size (the publishers know it; readers size their receive pool by it);
//   3. Hub::join(MPI_COMM_WORLD) — the coordinator runs in world rank 0 unless --hub is given;
//   ... the command's work ...
//   4. a barrier on MPI_COMM_WORLD (publishers keep serving until every reader is done);
//   5. Hub::close().
#pragma once

#include <boost/program_options.hpp>
#include <cstdint>
#include <memory>
#include <string>

#include "tensorhub/hub.hpp"
#include "tensorhub/mpi/mpi.hpp"

namespace tensorhub::cli {

enum class Role : int { kPublish = 1, kPull = 2, kSnapshotSave = 3 };

// Hub settings every MPI command takes (--hub, --transport, --chunk, --pool, ...).
struct HubFlags {
  std::string hub;
  std::string transport = "auto";
  std::string chunk = "4MiB";
  std::string pool;  // receive/publish pool size; empty = sized automatically
  std::uint32_t inflight = 8;
  std::uint32_t max_readers = 2;
  std::uint32_t plan_fanout = 1;  // HubOptions::plan_fanout
  std::uint32_t plan_rails = 1;   // HubOptions::plan_rails
  std::string snapshot_dir;
  double deadline_s = 300;
  std::string trace;   // --trace FILE (common/trace_merge.hpp)
  std::string device;  // HubOptions::device, set by commands with --memory (common/memory.hpp)

  void add_to(boost::program_options::options_description& desc);
  // Validates the sizes (throws UserError) before MPI starts.
  void check() const;
  HubOptions to_options(std::uint64_t pool_bytes) const;
};

struct Job {
  int world_rank = 0;
  int world_size = 1;
  mpi::Comm role;                 // the ranks running this command
  std::uint64_t model_bytes = 0;  // the largest size any rank announced
  std::unique_ptr<Hub> hub;
  std::string trace;  // merged by leave_job
};

// Steps 1-3. `known_model_bytes`: what this rank knows of the model size (0 = nothing);
// `pool_for(model_bytes, role)` returns the registered memory this rank needs once the job agreed
// on the model size (an explicit --pool wins).
Job join_job(Role role, const HubFlags& flags, std::uint64_t known_model_bytes,
             const std::function<std::uint64_t(std::uint64_t model_bytes, const mpi::Comm& role)>& pool_for);

// Steps 4-5, then the ranks' traces are merged into --trace FILE on world rank 0.
void leave_job(Job& job);

}  // namespace tensorhub::cli
