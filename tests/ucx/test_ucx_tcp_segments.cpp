// UCX TCP segment defaults and the read piece that follows from them (ucx/tcp_segments.hpp).
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <vector>

#include "read_util.hpp"
#include "ucx/tcp_segments.hpp"
#include "ucx/ucx_transport.hpp"

namespace tensorhub::transport {
namespace {

using ucx::default_am_piece;
using ucx::kAmFragmentSlack;
using ucx::kAmLargePiece;
using ucx::kTcpSegmentDefault;
using ucx::parse_ucx_memunits;
using ucx::tcp_tx_segment;

// Sets or unsets the two UCX variables for one test, restoring what was there.
class SegmentVariables {
 public:
  SegmentVariables(const char* tx, const char* rx) {
    save("UCX_TCP_TX_SEG_SIZE", tx);
    save("UCX_TCP_RX_SEG_SIZE", rx);
  }
  ~SegmentVariables() {
    for (const auto& [name, value] : saved_) {
      if (value) {
        ::setenv(name, value->c_str(), 1);
      } else {
        ::unsetenv(name);
      }
    }
  }
  SegmentVariables(const SegmentVariables&) = delete;
  SegmentVariables& operator=(const SegmentVariables&) = delete;

 private:
  void save(const char* name, const char* value) {
    const char* old = std::getenv(name);
    saved_.emplace_back(name, old ? std::optional<std::string>(old) : std::nullopt);
    if (value) {
      ::setenv(name, value, 1);
    } else {
      ::unsetenv(name);
    }
  }
  std::vector<std::pair<const char*, std::optional<std::string>>> saved_;
};

TEST(UcxTcpSegments, ParsesUcxMemoryUnits) {
  EXPECT_EQ(parse_ucx_memunits("8192"), 8192u);
  EXPECT_EQ(parse_ucx_memunits("8kb"), 8192u);
  EXPECT_EQ(parse_ucx_memunits("256K"), 256u << 10);
  EXPECT_EQ(parse_ucx_memunits("1m"), 1u << 20);
  EXPECT_EQ(parse_ucx_memunits("2GB"), 2ull << 30);
  EXPECT_EQ(parse_ucx_memunits("64b"), 64u);
  EXPECT_EQ(parse_ucx_memunits("inf"), std::nullopt);
  EXPECT_EQ(parse_ucx_memunits("auto"), std::nullopt);
  EXPECT_EQ(parse_ucx_memunits("8 kb"), std::nullopt);
  EXPECT_EQ(parse_ucx_memunits("8kib"), std::nullopt);
  EXPECT_EQ(parse_ucx_memunits(""), std::nullopt);
  EXPECT_EQ(parse_ucx_memunits("99999999999999999999g"), std::nullopt);
}

TEST(UcxTcpSegments, OursOnlyWhereTheUserSetNeither) {
  {
    const SegmentVariables vars(nullptr, nullptr);
    EXPECT_EQ(tcp_tx_segment(), kTcpSegmentDefault);
    EXPECT_EQ(default_am_piece(), kTcpSegmentDefault - kAmFragmentSlack);
  }
  {
    const SegmentVariables vars("1m", "1m");
    EXPECT_EQ(tcp_tx_segment(), 1u << 20);
    EXPECT_EQ(default_am_piece(), (1u << 20) - kAmFragmentSlack);
  }
  {
    const SegmentVariables vars(nullptr, "1m");  // UCX's own 8 KiB TX segment then
    EXPECT_EQ(tcp_tx_segment(), 8u << 10);
    EXPECT_EQ(default_am_piece(), kAmLargePiece);  // too small to be worth one-fragment pieces
  }
  {
    const SegmentVariables vars("inf", nullptr);
    EXPECT_EQ(tcp_tx_segment(), std::nullopt);
    EXPECT_EQ(default_am_piece(), kAmLargePiece);
  }
}

// The defaults as a transport resolves them, and reads that cross piece boundaries still land
// byte-exact with one-fragment pieces (a 1 MiB + 3 byte read is 5 pieces of 255 KiB).
TEST(UcxTcpSegments, TransportReadsInOneSegmentPieces) {
  const SegmentVariables vars(nullptr, nullptr);
  UcxOptions options;
  options.read = UcxRead::kAm;
  UcxTransport holder(options);
  UcxTransport reader(options);
  EXPECT_EQ(reader.stats().am_piece, kTcpSegmentDefault - kAmFragmentSlack);
  const std::size_t n = (1u << 20) + 3;
  std::vector<unsigned char> src(n);
  for (std::size_t i = 0; i < n; ++i) src[i] = static_cast<unsigned char>(i * 7 + i / 251);
  const MemoryRange range{src.data(), src.size()};
  auto exposure = holder.expose(std::span(&range, 1));
  std::vector<unsigned char> got(n, 0);
  const auto done = test::read_regions(reader, {{holder.endpoint(), exposure->descriptors()[0], n}}, got.data(), n, 1,
                                       std::chrono::seconds(30));
  ASSERT_EQ(done.size(), 1u);
  EXPECT_TRUE(done[0].ok) << done[0].error;
  EXPECT_EQ(got, src);
  EXPECT_EQ(reader.stats().am_reads, 1u);
}

}  // namespace
}  // namespace tensorhub::transport
