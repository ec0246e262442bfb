// `local` backend: every "peer" lives in this process, reads are memcpy. Used by unit tests of
// the transfer engine and coordinator (many fake workers in one process) and by MPI-free tools.
#pragma once

#include <deque>
#include <memory>
#include <string>

#include "tensorhub/transport/transport.hpp"

namespace tensorhub::transport {

class LocalTransport final : public Transport {
 public:
  // `name` must be unique among the workers of one process (e.g. "trainer0").
  explicit LocalTransport(std::string name);

  std::string_view name() const override { return "local"; }
  const std::string& endpoint() const override { return endpoint_; }
  bool reaches(std::string_view endpoint) const override;
  std::unique_ptr<Exposure> expose(std::span<const MemoryRange> ranges) override;
  bool can_scatter(std::string_view endpoint, std::string_view) const override { return reaches(endpoint); }
  void post(const ReadOp& op) override;
  void poll(std::vector<Completion>& out) override;
  std::size_t in_flight() const override { return done_.size(); }

 private:
  std::string endpoint_;
  std::deque<Completion> done_;
};

}  // namespace tensorhub::transport
