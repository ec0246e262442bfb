#include "read_bounds.hpp"

#include <limits>
#include <string>

#include "tensorhub/core/error.hpp"

namespace tensorhub::transport {

std::uint64_t checked_displacement(const Region& region, std::uint64_t offset, std::uint64_t length, int target,
                                   std::span<const std::uint64_t> pool_bytes, std::string_view endpoint) {
  const auto where = [&] { return " (holder " + std::string(endpoint) + ")"; };
  if (target < 0 || static_cast<std::uint64_t>(target) >= pool_bytes.size()) {
    throw TransportError("mpi_rma: rank " + std::to_string(target) + " is not in this MPI job of " +
                         std::to_string(pool_bytes.size()) + " ranks" + where());
  }
  if (offset > region.bytes || length > region.bytes - offset) {
    throw TransportError("mpi_rma: read past the end of a region exposed by " + std::string(endpoint));
  }
  // MPI_Aint is signed: the region's end must fit in it.
  constexpr auto kMaxDisp = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
  if (region.address > kMaxDisp || region.bytes > kMaxDisp - region.address) {
    throw TransportError("mpi_rma: region descriptor " + std::to_string(region.address) + ":" +
                         std::to_string(region.bytes) + " lies outside any window" + where());
  }
  const auto pool = pool_bytes[static_cast<std::size_t>(target)];
  if (pool > 0 && (region.address > pool || region.bytes > pool - region.address)) {
    throw TransportError("mpi_rma: region descriptor " + std::to_string(region.address) + ":" +
                         std::to_string(region.bytes) + " lies outside the " + std::to_string(pool) +
                         "-byte pool rank " + std::to_string(target) + " registered" + where());
  }
  return region.address + offset;
}

}  // namespace tensorhub::transport
