// What `mpirun` passed to this process, for the command line a benchmark prints: Open MPI hands
// every `--mca NAME VALUE` to the ranks as OMPI_MCA_NAME=VALUE (an exported OMPI_MCA_* looks the
// same and has the same effect) and `--oversubscribe` as rmaps_base_oversubscribe=1. The
// launcher's own variables (orte_*, ess*, pmix, ...) are left out. Empty under another MPI.
#pragma once

#include <map>
#include <string>

namespace tensorhub::cli::bench {

// NAME -> VALUE of every OMPI_MCA_* variable but the launcher's own, sorted.
std::map<std::string, std::string> mca_seen();

// " --oversubscribe --mca osc ucx" (each flag with a leading space), from mca_seen().
std::string mpirun_flags_seen();

}  // namespace tensorhub::cli::bench
