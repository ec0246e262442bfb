// stream_copy (lib/transport/cma/stream_copy.hpp): the copy a scattered cma read streams its
// pieces out with. Every alignment of source and destination and every length around the
// 64-byte lines copies exactly the bytes asked for and writes nothing around them.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "cma/stream_copy.hpp"

namespace tensorhub::transport::cma {
namespace {

TEST(CmaStreamCopy, CopiesEveryAlignmentAndLengthExactly) {
  constexpr std::size_t kPad = 128;
  std::vector<unsigned char> from(4096 + 2 * kPad);
  for (std::size_t i = 0; i < from.size(); ++i) from[i] = static_cast<unsigned char>(i * 131 + 7);
  std::vector<unsigned char> to(from.size());
  for (const std::size_t length : {0u, 1u, 15u, 16u, 63u, 64u, 65u, 127u, 128u, 129u, 1000u, 1024u, 4096u}) {
    for (std::size_t dst_at = kPad; dst_at < kPad + 64; dst_at += 7) {
      for (std::size_t src_at = kPad; src_at < kPad + 64; src_at += 13) {
        std::fill(to.begin(), to.end(), 0xee);
        stream_copy(to.data() + dst_at, from.data() + src_at, length);
        stream_fence();
        for (std::size_t i = 0; i < to.size(); ++i) {
          const bool inside = i >= dst_at && i < dst_at + length;
          const unsigned char want = inside ? from[src_at + (i - dst_at)] : 0xee;
          ASSERT_EQ(to[i], want) << "length " << length << " to+" << dst_at << " from+" << src_at << " byte " << i;
        }
      }
    }
  }
}

}  // namespace
}  // namespace tensorhub::transport::cma
