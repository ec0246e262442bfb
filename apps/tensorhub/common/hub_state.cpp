#include "common/hub_state.hpp"

#include <chrono>

#include "tensorhub/coord/grpc_client.hpp"
#include "tensorhub/core/error.hpp"

namespace tensorhub::cli {

std::unique_ptr<coord::Client> connect_hub(const std::string& address, double rpc_deadline_s) {
  if (address.empty()) {
    throw UserError(
        "no coordinator address: pass --hub HOST:PORT or set TENSORHUB_HUB "
        "(`tensorhub serve` prints it when it starts)");
  }
  return std::make_unique<coord::GrpcClient>(
      address, std::chrono::milliseconds(static_cast<std::int64_t>(rpc_deadline_s * 1000)));
}

bool version_lost(const coord::VersionStatus& v) { return v.committed && !v.readable && v.snapshot.empty(); }

std::string version_state(const coord::VersionStatus& v) {
  if (!v.committed) return "pending";
  if (v.readable && v.holders == 0 && !v.snapshot.empty()) return "readable (file)";
  if (v.readable) return "readable";
  return v.snapshot.empty() ? "LOST" : "file only";
}

}  // namespace tensorhub::cli
