// Asynchronous publishes (private header): PublishHandle::State, shared by a handle, the worker
// thread that hashes and commits the shard, and an unpublish() that cancels it; AsyncPublishes,
// the HubCore's set of those threads (async_jobs.hpp).
#pragma once

#include <atomic>

#include "async_jobs.hpp"
#include "async_outcome.hpp"
#include "tensorhub/hub.hpp"

namespace tensorhub {

class PublishHandle::State : public AsyncOutcome<PublishResult> {
 public:
  std::atomic<bool> cancel{false};  // checked before every chunk's checksum and before the commit
};

using AsyncPublishes = AsyncJobs<PublishHandle::State>;

}  // namespace tensorhub
