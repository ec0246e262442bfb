#include "options.hpp"

#include "tensorhub/core/env.hpp"

namespace tensorhub::transport {

const char* to_string(MpiReadMode mode) { return mode == MpiReadMode::kRget ? "rget" : "get_flush"; }

MpiRmaOptions MpiRmaOptions::from_env() {
  MpiRmaOptions o;
  if (const auto n = env::integer("TENSORHUB_MPI_MAX_ATTACH", 1, 65536)) o.max_attach = static_cast<std::size_t>(*n);
  if (const auto p = env::micros("TENSORHUB_MPI_PROGRESS_US", 0, 1000000)) o.progress_period = *p;
  if (const auto ft = env::flag("TENSORHUB_MPI_FT")) o.fault_tolerance = *ft;
  if (const auto m = env::choice("TENSORHUB_MPI_READ", {"get_flush", "rget"}))
    o.read_mode = *m == "rget" ? MpiReadMode::kRget : MpiReadMode::kGetFlush;
  return o;
}

}  // namespace tensorhub::transport
