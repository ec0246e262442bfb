// When a GrpcClient call tries again (private to tensorhub_coord; grpc_client.cpp).
#pragma once

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <random>
#include <string_view>

namespace tensorhub::coord::detail {

// The server had no thread for the call: gRPC's synchronous server answers RESOURCE_EXHAUSTED
// "Server Threadpool Exhausted" once max_threads handlers run. Transient: the call is retried.
// Other RESOURCE_EXHAUSTED answers (a message over the size limit, too many long polls) are not.
inline bool server_busy(const grpc::Status& status) {
  return status.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED &&
         std::string_view(status.error_message()).find("Threadpool Exhausted") != std::string_view::npos;
}

// Pause before attempt `tried` + 1 at a busy server: 5 ms doubling to 320 ms, times a random
// 0.5-1.5 so that the readers that were turned away together do not come back together.
inline std::chrono::milliseconds busy_pause(std::size_t tried) {
  const auto base = 5.0 * static_cast<double>(1u << std::min<std::size_t>(tried > 0 ? tried - 1 : 0, 6));
  std::minstd_rand rng(std::random_device{}());
  std::uniform_real_distribution<double> jitter(0.5, 1.5);
  return std::chrono::milliseconds(static_cast<long>(base * jitter(rng)) + 1);
}

}  // namespace tensorhub::coord::detail
