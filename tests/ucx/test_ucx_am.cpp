// Reads served by active messages (lib/transport/ucx/am_*.hpp): the wire codec, the lane parse
// that picks them per holder, and two transports in one process with each read mode.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <span>
#include <string>

#include "read_util.hpp"
#include "tensorhub/core/error.hpp"
#include "ucx/am_protocol.hpp"
#include "ucx/lanes.hpp"
#include "ucx/ucx_transport.hpp"
#include "ucx_test_util.hpp"

namespace tensorhub::transport {
namespace {

constexpr std::uint64_t kMiB = 1ull << 20;
using ucx::AmReply;
using ucx::AmRequest;

TEST(UcxAmCodec, RequestAndReplyRoundTrip) {
  const AmRequest q{7, 0x7f0000001000, 4096, 0xfeedbeefcafe};
  const auto qb = ucx::encode(q);
  const auto q2 = ucx::decode_request(qb);
  ASSERT_TRUE(q2);
  EXPECT_EQ(q2->request_id, 7u);
  EXPECT_EQ(q2->address, q.address);
  EXPECT_EQ(q2->length, 4096u);
  EXPECT_EQ(q2->key_hash, q.key_hash);
  const AmReply r{-3, 9, 4096};
  const auto r2 = ucx::decode_reply(ucx::encode(r));
  ASSERT_TRUE(r2);
  EXPECT_EQ(r2->status, -3);
  EXPECT_EQ(r2->request_id, 9u);
  EXPECT_EQ(r2->length, 4096u);
}

TEST(UcxAmCodec, RejectsMalformedHeaders) {
  auto qb = ucx::encode(AmRequest{1, 4096, 8, 1});
  EXPECT_FALSE(ucx::decode_request(std::span(qb).first(39)));  // short
  auto bad = qb;
  bad[0] = std::byte{'X'};  // magic
  EXPECT_FALSE(ucx::decode_request(bad));
  bad = qb;
  bad[4] = std::byte{2};  // version
  EXPECT_FALSE(ucx::decode_request(bad));
  EXPECT_FALSE(ucx::decode_request(ucx::encode(AmRequest{1, 4096, 0, 1})));                     // nothing asked
  EXPECT_FALSE(ucx::decode_request(ucx::encode(AmRequest{1, 4096, ucx::kAmMaxPiece + 1, 1})));  // too much
  EXPECT_FALSE(ucx::decode_request(ucx::encode(AmRequest{1, ~0ull - 3, 8, 1})));                // wraps
  const auto rb = ucx::encode(AmReply{0, 1, 8});
  EXPECT_FALSE(ucx::decode_reply(qb));  // a request is no reply
  EXPECT_FALSE(ucx::decode_reply(std::span(rb).first(20)));
  EXPECT_FALSE(ucx::decode_reply(ucx::encode(AmReply{0, 1, ucx::kAmMaxPiece + 1})));
}

TEST(UcxLanes, TcpHasNoHardwareRmaRcHas) {
  const std::string tcp =
      "#\n# UCP endpoint \n#\n#               peer: <no debug data>\n"
      "#                 lane[0]:  1:tcp/lo.0 md[1]                -> md[1]/tcp/sysdev[255] am am_bw#0 keepalive "
      "wireup\n#\n#                 am_send: 0..<egr/short>..8185..<egr/zcopy>..20553..<rndv>..(inf)\n#\n"
      "#                  rma_bw: mds rndv_rkey_size 9\n";
  EXPECT_FALSE(ucx::lanes_have_rma(tcp));
  const std::string rc =
      "#                 lane[0]:  3:mlx5_0:1/rc_mlx5.0 md[2]  -> md[2]/ib/sysdev[255] rma_bw#0 am am_bw#0 wireup\n"
      "#                 lane[1]:  4:mlx5_0:1/ud_mlx5.0 md[2]  -> md[2]/ib/sysdev[255] keepalive\n";
  EXPECT_TRUE(ucx::lanes_have_rma(rc));
  EXPECT_TRUE(ucx::lanes_have_rma("#   lane[2]:  5:x/dc md[0] -> md[0]/ib rma amo\n"));
  EXPECT_FALSE(ucx::lanes_have_rma(""));
  EXPECT_FALSE(ucx::lanes_have_rma("rma_bw#0 without a lane line\n"));
  EXPECT_FALSE(ucx::lanes_have_rma("# lane[0]: 1:tcp/rma_bw#0 md[1] -> md[1]/tcp am\n"));  // before the arrow
  EXPECT_FALSE(ucx::lanes_have_rma("# lane[0]: 1:tcp md[1] -> rma_bw#0\n"));               // the resource, not a role
}

UcxOptions mode(const char* label, UcxRead read) {
  UcxOptions o;
  o.label = label;
  o.read = read;
  return o;
}

struct Buffer {
  Buffer(Transport& t, std::uint64_t n) : transport(t), data(static_cast<unsigned char*>(t.allocate(n))) {}
  ~Buffer() { transport.deallocate(data); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  Transport& transport;
  unsigned char* data;
};

std::vector<Completion> read_one(Transport& reader, const ReadOp& op) {
  reader.post(op);
  std::vector<Completion> done;
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (done.empty() && std::chrono::steady_clock::now() < end) reader.poll(done);
  return done;
}

class UcxReadModes : public ::testing::TestWithParam<UcxRead> {
 protected:
  void SetUp() override { alarm(60); }
  void TearDown() override { alarm(0); }
  UcxTransport holder{mode("holder", UcxRead::kAuto)};
  UcxTransport reader{mode("reader", GetParam())};
};

// 40 MiB + 3 bytes (a piece boundary that is not a page boundary) read in 6 MiB reads, 5 in
// flight: every byte checked, and the reads went the way the mode says.
TEST_P(UcxReadModes, ReadsEveryByteTheWayTheModeSays) {
  const std::uint64_t total = 40 * kMiB + 3;
  Buffer src(holder, total);
  test::fill_pattern(src.data, total, 41);
  const MemoryRange range{src.data, total};
  const auto exposure = holder.expose(std::span(&range, 1));
  Buffer dst(reader, total);
  std::memset(dst.data, 0, total);
  const auto done = test::read_regions(reader, {{holder.endpoint(), exposure->descriptors()[0], total}}, dst.data,
                                       6 * kMiB, 5, std::chrono::seconds(30));
  ASSERT_EQ(done.size(), 7u);
  for (const auto& c : done) EXPECT_TRUE(c.ok) << c.error;
  EXPECT_TRUE(test::check_pattern(dst.data, 0, total, 41));
  const auto r = reader.stats();
  const auto h = holder.stats();
  if (GetParam() == UcxRead::kAm) {
    EXPECT_EQ(r.am_reads, 7u);
    EXPECT_EQ(r.gets, 0u);
    // Pieces of r.am_piece (255 KiB by default): 6 reads of 6 MiB and the last of 4 MiB + 3 bytes.
    const auto pieces = [&](std::uint64_t n) { return (n + r.am_piece - 1) / r.am_piece; };
    EXPECT_EQ(h.am_served, 6 * pieces(6 * kMiB) + pieces(4 * kMiB + 3));
  } else if (GetParam() == UcxRead::kGet) {
    EXPECT_EQ(r.gets, 7u);
    EXPECT_EQ(r.am_reads, 0u);
    EXPECT_EQ(h.am_served, 0u);
  } else {
    EXPECT_EQ(r.gets + r.am_reads, 7u);
  }
  EXPECT_EQ(h.am_refused, 0u);
  EXPECT_EQ(reader.in_flight(), 0u);
}

INSTANTIATE_TEST_SUITE_P(Modes, UcxReadModes, ::testing::Values(UcxRead::kAm, UcxRead::kGet, UcxRead::kAuto),
                         [](const auto& p) {
                           return p.param == UcxRead::kAm ? "am" : p.param == UcxRead::kGet ? "get" : "auto";
                         });

class UcxAm : public ::testing::Test {
 protected:
  void SetUp() override { alarm(60); }
  void TearDown() override { alarm(0); }
  UcxTransport holder{mode("holder", UcxRead::kAm)};
  UcxTransport reader{mode("reader", UcxRead::kAm)};
};

// label security: a request for memory the holder does not expose (a descriptor whose address was
// moved onto an unexposed buffer) is refused by the holder; the read fails, the holder serves the
// honest read next. (Over TCP UCX packs the same key for every registration, so the key hash
// cannot tell two exposures apart: what is enforced is "inside exposed memory".)
TEST_F(UcxAm, HolderRefusesBytesTheKeyDoesNotCover) {
  std::vector<unsigned char> a(64 * 1024, 1);
  std::vector<unsigned char> b(64 * 1024, 2);
  std::vector<unsigned char> secret(64 * 1024, 3);  // never exposed
  const MemoryRange ra{a.data(), a.size()};
  const MemoryRange rb{b.data(), b.size()};
  const auto ea = holder.expose(std::span(&ra, 1));
  const auto eb = holder.expose(std::span(&rb, 1));
  std::string forged = ea->descriptors()[0];  // "ucx:<address hex>:<bytes>:<key>"
  const auto first = forged.find(':') + 1;
  const auto second = forged.find(':', first);
  char hex[32];
  std::snprintf(hex, sizeof hex, "%llx",
                static_cast<unsigned long long>(reinterpret_cast<std::uintptr_t>(secret.data())));
  forged.replace(first, second - first, hex);
  std::vector<unsigned char> got(4096, 0);
  auto done = read_one(reader, {holder.endpoint(), forged, 0, got.data(), got.size(), 1});
  ASSERT_EQ(done.size(), 1u);
  EXPECT_FALSE(done[0].ok);
  EXPECT_NE(done[0].error.find("refused"), std::string::npos) << done[0].error;
  EXPECT_EQ(got[0], 0);
  EXPECT_EQ(holder.stats().am_refused, 1u);

  done = read_one(reader, {holder.endpoint(), eb->descriptors()[0], 0, got.data(), got.size(), 2});
  ASSERT_EQ(done.size(), 1u);
  EXPECT_TRUE(done[0].ok) << done[0].error;
  EXPECT_EQ(got[4095], 2);
}

// A withdrawn exposure is no longer served: the read is refused, not read from unmapped memory.
TEST_F(UcxAm, WithdrawnExposureIsRefused) {
  std::vector<unsigned char> a(64 * 1024, 7);
  const MemoryRange ra{a.data(), a.size()};
  auto exposure = holder.expose(std::span(&ra, 1));
  const std::string descriptor = exposure->descriptors()[0];
  std::vector<unsigned char> got(1024, 0);
  auto done = read_one(reader, {holder.endpoint(), descriptor, 0, got.data(), got.size(), 1});
  ASSERT_EQ(done.size(), 1u);
  EXPECT_TRUE(done[0].ok) << done[0].error;
  exposure.reset();
  done = read_one(reader, {holder.endpoint(), descriptor, 0, got.data(), got.size(), 2});
  ASSERT_EQ(done.size(), 1u);
  EXPECT_FALSE(done[0].ok);
  EXPECT_NE(done[0].error.find("refused"), std::string::npos) << done[0].error;
}

TEST(UcxOptionsAm, ReadModeAndPieceFromEnvironment) {
  ::setenv("TENSORHUB_UCX_READ", "am", 1);
  ::setenv("TENSORHUB_UCX_AM_PIECE", "256KiB", 1);
  auto o = UcxOptions::from_env();
  EXPECT_EQ(o.read, UcxRead::kAm);
  EXPECT_EQ(o.am_piece, 256u * 1024);
  ::setenv("TENSORHUB_UCX_READ", "get", 1);
  EXPECT_EQ(UcxOptions::from_env().read, UcxRead::kGet);
  ::setenv("TENSORHUB_UCX_READ", "rdma", 1);
  EXPECT_THROW(UcxOptions::from_env(), UserError);
  ::unsetenv("TENSORHUB_UCX_READ");
  ::setenv("TENSORHUB_UCX_AM_PIECE", "1", 1);
  EXPECT_THROW(UcxOptions::from_env(), UserError);
  ::unsetenv("TENSORHUB_UCX_AM_PIECE");
  o = UcxOptions::from_env();
  EXPECT_EQ(o.read, UcxRead::kAuto);
  EXPECT_EQ(o.am_piece, 0u);  // one TCP segment: test_ucx_tcp_segments.cpp
}

}  // namespace
}  // namespace tensorhub::transport
