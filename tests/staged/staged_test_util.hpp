// Shared by the staged tests: a forked staged holder (ForkedDeviceHolder with a StagedTransport
// whose ring is read over cma), a reader transport, and a loop that polls until reads finish.
#pragma once

#include <chrono>
#include <memory>
#include <vector>

#include "cma/cma_transport.hpp"
#include "forked_device_holder.hpp"
#include "staged/staged_transport.hpp"

namespace tensorhub::test {

inline transport::StagedOptions staged_options(std::uint64_t slot = 64 << 10, std::uint32_t slots = 4,
                                               std::uint32_t depth = 2) {
  transport::StagedOptions o;
  o.slot_bytes = slot;
  o.slots = slots;
  o.depth = depth;
  o.timeout = std::chrono::milliseconds(3000);
  o.address = "127.0.0.1";
  return o;
}

inline std::unique_ptr<transport::Transport> make_cma() {
  return std::make_unique<transport::CmaTransport>(transport::CmaOptions{});
}

inline std::unique_ptr<transport::StagedTransport> make_staged(device::Device& d,
                                                               transport::StagedOptions o = staged_options()) {
  return std::make_unique<transport::StagedTransport>(
      d, [] { return make_cma(); }, o);
}

inline MakeHolderTransport staged_holder(transport::StagedOptions o = staged_options()) {
  return [o](device::Device& d) -> std::unique_ptr<transport::Transport> { return make_staged(d, o); };
}

// Polls `t` until `n` completions arrived or `limit` passed.
inline std::vector<transport::Completion> wait_for(transport::Transport& t, std::size_t n,
                                                   std::chrono::milliseconds limit = std::chrono::seconds(20)) {
  std::vector<transport::Completion> done;
  const auto end = std::chrono::steady_clock::now() + limit;
  while (done.size() < n && std::chrono::steady_clock::now() < end) t.poll(done);
  return done;
}

}  // namespace tensorhub::test
