// `--trace FILE` of the MPI commands: every rank's hub writes its own trace file
// (HubOptions::trace_path, FILE.rank<r>); after Hub::close the command merges them into FILE on
// world rank 0 over MPI (the ranks may run on hosts without a shared file system) and removes
// the per-rank files.
#pragma once

#include <mpi.h>

#include <string>

namespace tensorhub::cli {

// Collective over `comm` (the communicator the hub joined): every rank calls it, with an empty
// path if it did not trace. The lowest rank with a path merges every rank's file into its path
// (the ranks of an MPMD job's other commands may not trace). Returns the number of ranks merged
// on that rank, 0 elsewhere. Traces over 2 GiB together stay per-rank files.
int merge_job_trace(MPI_Comm comm, const std::string& path);

}  // namespace tensorhub::cli
