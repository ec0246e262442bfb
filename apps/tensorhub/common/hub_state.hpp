// Reading the coordinator's directory from outside a job (no MPI): used by `status` and
// `recover`. The coordinator address comes from --hub (or TENSORHUB_HUB, or the config file).
#pragma once

#include <memory>
#include <string>

#include "tensorhub/coord/client.hpp"

namespace tensorhub::cli {

// A gRPC client for `address`; UserError if the address is empty.
std::unique_ptr<coord::Client> connect_hub(const std::string& address, double rpc_deadline_s);

// "readable", "readable (file)", "pending", or "LOST" (committed, some chunk without a live
// holder and no snapshot file).
std::string version_state(const coord::VersionStatus& v);
bool version_lost(const coord::VersionStatus& v);

}  // namespace tensorhub::cli
