// What every part of one rank's hub shares (private header): the control-plane client, the
// data-plane transport, the options, the logger and this worker's id at the coordinator.
#pragma once

#include <atomic>
#include <string>

#include "hub_device.hpp"
#include "tensorhub/coord/client.hpp"
#include "tensorhub/core/log.hpp"
#include "tensorhub/core/trace.hpp"
#include "tensorhub/hub.hpp"
#include "tensorhub/transport/transport.hpp"

namespace tensorhub {

struct HubContext {
  coord::Client& client;
  transport::Transport& transport;
  HubOptions options;
  int rank = 0;
  Logger log;
  TraceRecorder* trace = nullptr;  // set when HubOptions::trace_path is
  HubDevice* device = nullptr;     // always set (the device itself is made on first use)
  // Written by Registration (join, re-registration); read by everyone.
  std::atomic<coord::WorkerId> self{0};

  coord::WorkerId id() const { return self.load(); }
};

// "'<model>' v<version>", as every message names a version.
inline std::string vname(const std::string& model, std::uint64_t version) {
  return "'" + model + "' v" + std::to_string(version);
}

}  // namespace tensorhub
