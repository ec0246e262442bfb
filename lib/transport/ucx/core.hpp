// What a UcxTransport shares with the exposures it hands out: the context (memory registration),
// the worker, the server of active-message reads of the exposed memory, and the one mutex held
// around every call into any of them. Exposures keep it alive, so one may outlive its transport.
#pragma once

#include <mutex>

#include "am_server.hpp"
#include "context.hpp"
#include "worker.hpp"

namespace tensorhub::transport::ucx {

struct Core {
  Context context;
  Worker worker{context};
  AmServer server{worker};
  std::mutex mutex;
};

}  // namespace tensorhub::transport::ucx
