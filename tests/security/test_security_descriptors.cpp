// Hostile ucx descriptors (issue 16 item 3): a fake version's random worker address used to
// abort a legitimate reader (ucp_address_unpack assertion) and a real endpoint with a random
// remote key made it segfault (ucp_ep_rkey_unpack). Now each is refused before UCX sees it: the
// read fails with a TransportError (the pull engine re-assigns it) and the process goes on.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <random>
#include <vector>

#include "../ucx/read_util.hpp"
#include "../ucx/ucx_test_util.hpp"
#include "tensorhub/core/error.hpp"
#include "ucx/codec.hpp"
#include "ucx/ucx_transport.hpp"

namespace tensorhub::transport {
namespace {

std::vector<std::byte> random_bytes(std::size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::vector<std::byte> out(n);
  for (auto& b : out) b = static_cast<std::byte>(gen() & 0xff);
  return out;
}

UcxOptions named(const char* label) {
  UcxOptions o;
  o.label = label;
  return o;
}

class SecurityDescriptors : public ::testing::Test {
 protected:
  void SetUp() override { alarm(60); }
  void TearDown() override { alarm(0); }
  UcxTransport holder{named("holder")};
  UcxTransport other{named("other")};
  UcxTransport reader{named("reader")};
};

TEST_F(SecurityDescriptors, HostileEndpointsAndKeysFailTheReadNotTheProcess) {
  constexpr std::uint64_t kBytes = 1 << 16;
  auto* src = static_cast<unsigned char*>(holder.allocate(kBytes));
  auto* src2 = static_cast<unsigned char*>(other.allocate(kBytes));
  auto* dst = static_cast<unsigned char*>(reader.allocate(kBytes));
  test::fill_pattern(src, kBytes, 3);
  const MemoryRange range{src, kBytes};
  const MemoryRange range2{src2, kBytes};
  const auto exposure = holder.expose({&range, 1});
  const auto exposure2 = other.expose({&range2, 1});
  const auto& good = exposure->descriptors().front();
  const auto real = ucx::decode_descriptor(good);

  // What an outsider could publish: raw random bytes as the key, a random worker address, and
  // a real key of another worker presented with the holder's endpoint.
  const auto raw_key = ucx::encode_descriptor(real.address, kBytes, random_bytes(41, 1));
  const std::string forged_key = good.substr(0, good.rfind(':') + 1) + ucx::base64_encode(random_bytes(60, 2));
  const auto evil_endpoint = "ucx:evil:" + ucx::base64_encode(random_bytes(300, 3));
  struct Case {
    std::string endpoint;
    std::string descriptor;
  };
  const std::vector<Case> hostile{{holder.endpoint(), raw_key},
                                  {holder.endpoint(), forged_key},
                                  {holder.endpoint(), exposure2->descriptors().front()},
                                  {evil_endpoint, good},
                                  {"ucx:evil:", good},
                                  {holder.endpoint(), "ucx:10:20:AAAA"}};
  std::uint64_t tag = 1;
  for (const auto& c : hostile) {
    SCOPED_TRACE(c.endpoint.substr(0, 20) + " " + c.descriptor.substr(0, 40));
    EXPECT_THROW(reader.post(ReadOp{c.endpoint, c.descriptor, 0, dst, kBytes, tag++}), TransportError);
  }
  // The reader survived and still reads the genuine descriptor.
  std::memset(dst, 0, kBytes);
  const auto done = test::read_regions(reader, {test::Region{holder.endpoint(), good, kBytes}}, dst, kBytes, 1,
                                       std::chrono::seconds(30));
  ASSERT_EQ(done.size(), 1u);
  EXPECT_TRUE(done.front().ok) << done.front().error;
  EXPECT_TRUE(test::check_pattern(dst, 0, kBytes, 3));
  reader.deallocate(dst);
  other.deallocate(src2);
  holder.deallocate(src);
}

}  // namespace
}  // namespace tensorhub::transport
