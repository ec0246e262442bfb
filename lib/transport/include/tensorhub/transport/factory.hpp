// Creates the data plane of a process: a `multi` transport (lib/transport/multi) over the data
// paths `name` lists, comma-separated: "mpi_rma" (collective over `comm`), "ucx" (when this build
// has UCX), "cma" (same host, process_vm_readv; not in "auto" yet), "local" (in-process, for tests); "auto" or "" means
// every path that serves other processes (mpi_rma, and ucx when built). The paths are tried in a fixed preference
// order, best first (same process, same MPI job, any process), whatever order `name` lists them in. The backends' own
// headers are private to lib/transport; users need only this header and transport.hpp.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tensorhub/transport/transport.hpp"

namespace tensorhub::transport {

// `job_tag` is the same on all ranks of one job and differs between jobs; `rank` names the
// local transport's endpoint; `pool_bytes` > 0 gives mpi_rma a registered pool. Throws
// UserError for an unknown or repeated name or a backend not built into this library.
std::unique_ptr<Transport> make_transport(const std::string& name, MPI_Comm comm, const std::string& job_tag, int rank,
                                          std::uint64_t pool_bytes);

// The paths `name` selects, in preference order (throws UserError as make_transport).
std::vector<std::string> transport_paths(const std::string& name);

}  // namespace tensorhub::transport
