// The text forms of ucx endpoints and descriptors (lib/transport/ucx/codec.hpp).
#include <gtest/gtest.h>

#include <random>

#include "tensorhub/core/error.hpp"
#include "ucx/codec.hpp"

namespace tensorhub::transport::ucx {
namespace {

std::vector<std::byte> random_bytes(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<std::byte> v(n);
  for (auto& b : v) b = static_cast<std::byte>(rng() & 0xff);
  return v;
}

TEST(UcxCodec, Base64RoundTripsEveryLength) {
  for (std::size_t n = 0; n < 70; ++n) {
    const auto bytes = random_bytes(n, static_cast<unsigned>(n));
    const auto text = base64_encode(bytes);
    EXPECT_EQ(text.size(), (n * 4 + 2) / 3);
    const auto back = base64_decode(text);
    ASSERT_TRUE(back.has_value()) << n;
    EXPECT_EQ(*back, bytes) << n;
  }
}

TEST(UcxCodec, Base64KnownValues) {
  const std::string s = "Man";
  EXPECT_EQ(base64_encode(std::as_bytes(std::span(s))), "TWFu");
  const std::vector<std::byte> ff{std::byte{0xfb}, std::byte{0xff}};
  EXPECT_EQ(base64_encode(ff), "-_8");  // url alphabet, no padding
}

TEST(UcxCodec, Base64RejectsNonCanonicalInput) {
  EXPECT_FALSE(base64_decode("TWFu=").has_value());  // padding
  EXPECT_FALSE(base64_decode("TW+u").has_value());   // standard alphabet
  EXPECT_FALSE(base64_decode("TWFuT").has_value());  // 4k+1 characters
  EXPECT_FALSE(base64_decode("-_9").has_value());    // non-zero trailing bits
  EXPECT_TRUE(base64_decode("").has_value());
}

TEST(UcxCodec, EndpointRoundTrip) {
  const auto address = random_bytes(333, 7);
  const auto text = encode_endpoint("node1/4242", address);
  EXPECT_TRUE(text.starts_with("ucx:node1/4242:"));
  EXPECT_TRUE(looks_like_endpoint(text));
  const auto e = decode_endpoint(text);
  EXPECT_EQ(e.label, "node1/4242");
  EXPECT_EQ(e.worker_address, address);
}

TEST(UcxCodec, EndpointLabelIsSanitised) {
  const auto e = decode_endpoint(encode_endpoint("a:b c", random_bytes(8, 1)));
  EXPECT_EQ(e.label, "a_b_c");
  EXPECT_EQ(decode_endpoint(encode_endpoint("", random_bytes(8, 1))).label, "_");
}

TEST(UcxCodec, MalformedEndpointsThrow) {
  for (const char* bad : {"", "ucx:", "ucx:label", "ucx::AAAA", "ucx:label:", "ucx:l:AA:AA", "ucx:l:A", "ucx:l:A+",
                          "local:x", "mpi_rma:job:1"}) {
    EXPECT_THROW(decode_endpoint(bad), TransportError) << bad;
  }
}

TEST(UcxCodec, DescriptorRoundTrip) {
  const auto rkey = random_bytes(41, 3);
  const std::uint64_t address = 0x7f12'3456'7000;
  const auto text = encode_descriptor(address, 64ull << 20, rkey);
  EXPECT_TRUE(text.starts_with("ucx:7f1234567000:67108864:"));
  const auto d = decode_descriptor(text);
  EXPECT_EQ(d.address, address);
  EXPECT_EQ(d.bytes, 64ull << 20);
  EXPECT_EQ(decode_rkey(d.rkey, {}), rkey);
}

// Security: descriptors that did not come from the holder never reach UCX (issue 16 item 3).
TEST(UcxCodec, ForeignOrTamperedDescriptorsThrow) {
  const auto holder = random_bytes(300, 5);
  const auto rkey = random_bytes(41, 3);
  const auto text = encode_descriptor(0x1000, 4096, rkey, holder);
  const auto d = decode_descriptor(text);  // points into `text`
  EXPECT_EQ(decode_rkey(d.rkey, holder), rkey);
  // Bound to its holder: the same key presented with another worker's endpoint is refused.
  EXPECT_THROW(decode_rkey(d.rkey, random_bytes(300, 6)), TransportError);
  // Raw (unframed) bytes, as an outsider would publish them: refused.
  EXPECT_THROW(decode_rkey(base64_encode(rkey), holder), TransportError);
  // One flipped bit anywhere in the frame: refused.
  auto framed = *base64_decode(d.rkey);
  for (std::size_t i = 0; i < framed.size(); ++i) {
    auto bad = framed;
    bad[i] ^= std::byte{0x10};
    EXPECT_THROW(decode_rkey(base64_encode(bad), holder), TransportError) << "byte " << i;
  }
  // A truncated frame and a garbage worker address in an endpoint: refused.
  framed.pop_back();
  EXPECT_THROW(decode_rkey(base64_encode(framed), holder), TransportError);
  EXPECT_THROW(decode_endpoint("ucx:evil:" + base64_encode(random_bytes(333, 9))), TransportError);
}

TEST(UcxCodec, MalformedDescriptorsThrow) {
  for (const char* bad : {"", "ucx:", "ucx:10:20", "ucx:10:20:", "ucx::20:AA", "ucx:10::AA", "ucx:xyz:20:AA",
                          "ucx:10:-2:AA", "ucx:10:20:A", "ucx:10:20:AA=", "140000:4096", "ucx:10:20x:AA"}) {
    EXPECT_THROW(decode_descriptor(bad), TransportError) << bad;
  }
}

}  // namespace
}  // namespace tensorhub::transport::ucx
