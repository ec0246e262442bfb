// Creates a transport backend by name: "mpi_rma" (collective over `comm`), "ucx" (when this
// build has UCX), "cma" (same-host process_vm_readv) or "local" (in-process, for tests). The backends' own headers are private to
// lib/transport; users of a transport need only this header and transport.hpp.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <memory>
#include <string>

#include "tensorhub/transport/transport.hpp"

namespace tensorhub::transport {

// `job_tag` is the same on all ranks of one job and differs between jobs; `rank` names the
// local transport's endpoint; `pool_bytes` > 0 gives mpi_rma a registered pool. Throws
// UserError for an unknown name or a backend not built into this library.
std::unique_ptr<Transport> make_transport(const std::string& name, MPI_Comm comm, const std::string& job_tag, int rank,
                                          std::uint64_t pool_bytes);

}  // namespace tensorhub::transport
