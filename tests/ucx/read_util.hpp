// Chunked reads of a holder's regions through any Transport, as the pull engine issues them.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "tensorhub/transport/transport.hpp"

namespace tensorhub::test {

struct Region {
  std::string endpoint;
  std::string descriptor;
  std::uint64_t bytes = 0;
};

// Reads each region whole into consecutive bytes of `dst` in `chunk`-byte reads, at most `depth`
// in flight. Stops posting after the first failure. Returns every completion (tag = byte offset
// in dst); stops waiting after `limit`.
inline std::vector<transport::Completion> read_regions(transport::Transport& t, const std::vector<Region>& regions,
                                                       unsigned char* dst, std::uint64_t chunk, std::size_t depth,
                                                       std::chrono::milliseconds limit) {
  struct Op {
    const Region* region;
    std::uint64_t offset;
    std::uint64_t dst_offset;
  };
  std::vector<Op> ops;
  std::uint64_t at = 0;
  for (const auto& r : regions) {
    for (std::uint64_t o = 0; o < r.bytes; o += chunk) ops.push_back(Op{&r, o, at + o});
    at += r.bytes;
  }
  std::vector<transport::Completion> out;
  std::size_t next = 0;
  std::size_t running = 0;
  bool failed = false;
  const auto end = std::chrono::steady_clock::now() + limit;
  while ((next < ops.size() && !failed) || running > 0) {
    while (running < depth && next < ops.size() && !failed) {
      const Op& op = ops[next++];
      const auto length = std::min(chunk, op.region->bytes - op.offset);
      t.post(transport::ReadOp{op.region->endpoint, op.region->descriptor, op.offset, dst + op.dst_offset, length,
                               op.dst_offset});
      ++running;
    }
    const auto before = out.size();
    t.poll(out);
    running -= out.size() - before;
    for (auto i = before; i < out.size(); ++i) failed |= !out[i].ok;
    if (std::chrono::steady_clock::now() > end) break;
    if (out.size() == before) std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
  return out;
}

}  // namespace tensorhub::test
