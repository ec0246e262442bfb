// Asynchronous pulls (private header): PullHandle::State, shared by a handle and the worker thread
// that runs the pull, and AsyncPulls, the HubCore's set of those threads (async_jobs.hpp).
#pragma once

#include <atomic>
#include <cstdint>

#include "async_jobs.hpp"
#include "async_outcome.hpp"
#include "tensorhub/hub.hpp"

namespace tensorhub {

class PullHandle::State : public AsyncOutcome<PullResult> {
 public:
  std::atomic<bool> cancel{false};
  std::atomic<std::uint64_t> done{0};
  std::atomic<std::uint64_t> total{0};
};

using AsyncPulls = AsyncJobs<PullHandle::State>;

}  // namespace tensorhub
