// Creates the data plane of a process: a `multi` transport (lib/transport/multi) over the data
// paths `name` lists, comma-separated: "mpi_rma" (collective over `comm`), "ucx" (when this build
// has UCX), "cma" (same host, process_vm_readv; not in "auto" yet), "device_ipc" (same host,
// device memory through the device's IPC handles; needs a device), "local" (in-process, for
// tests); "auto" or "" means every path that serves other processes (mpi_rma, ucx when built,
// and device_ipc when a device is given). The paths are tried in a fixed preference order, best
// first (same process, same host, same MPI job, any process), whatever order `name` lists them
// in. The backends' own headers are private to lib/transport; users need only this header and
// transport.hpp.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tensorhub/transport/transport.hpp"

namespace tensorhub::device {
class Device;
}

namespace tensorhub::transport {

// `job_tag` is the same on all ranks of one job and differs between jobs; `rank` names the
// local transport's endpoint; `pool_bytes` > 0 gives mpi_rma a registered pool. `device` (owned
// by the caller, outliving the transport; may be null) is given to the paths that need one
// (device_ipc). Throws UserError for an unknown or repeated name, a backend not built into this
// library, or device_ipc without a device.
std::unique_ptr<Transport> make_transport(const std::string& name, MPI_Comm comm, const std::string& job_tag, int rank,
                                          std::uint64_t pool_bytes, device::Device* device = nullptr);

// The paths `name` selects, in preference order (throws UserError as make_transport);
// `with_device`: whether "auto" includes device_ipc (make_transport passes device != nullptr).
std::vector<std::string> transport_paths(const std::string& name, bool with_device = false);

}  // namespace tensorhub::transport
