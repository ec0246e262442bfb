// What a UcxTransport shares with the exposures it hands out: the context (memory registration),
// the worker, and the one mutex held around every call into either. Exposures keep it alive, so
// one may outlive its transport.
#pragma once

#include <mutex>

#include "context.hpp"
#include "worker.hpp"

namespace tensorhub::transport::ucx {

struct Core {
  Context context;
  Worker worker{context};
  std::mutex mutex;
};

}  // namespace tensorhub::transport::ucx
