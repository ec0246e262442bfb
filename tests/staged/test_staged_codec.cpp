// The staged path's text forms and frames against hostile input: every malformed endpoint,
// descriptor and frame throws TransportError; nothing crashes, nothing is accepted half-read.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "staged/codec.hpp"
#include "tensorhub/core/error.hpp"

namespace tensorhub::transport::staged {
namespace {

TEST(StagedCodec, EndpointAndDescriptorRoundTrip) {
  EndpointText e{"10.1.2.3", 4567, 99, {}};
  for (std::size_t i = 0; i < e.key.size(); ++i) e.key[i] = static_cast<std::uint8_t>(i * 17);
  const auto d = decode_endpoint(encode_endpoint(e));
  EXPECT_EQ(d.address, "10.1.2.3");
  EXPECT_EQ(d.port, 4567);
  EXPECT_EQ(d.pid, 99u);
  EXPECT_EQ(d.key, e.key);
  const auto r = decode_descriptor(encode_descriptor({42, 1ull << 40}));
  EXPECT_EQ(r.id, 42u);
  EXPECT_EQ(r.bytes, 1ull << 40);
}

TEST(StagedCodec, RejectsMalformedText) {
  const std::string key(32, 'a');
  for (const std::string& bad : std::vector<std::string>{
           "", "staged1:", "staged2:1.2.3.4:5:6:" + key, "staged1:1.2.3:5:6:" + key, "staged1:1.2.3.4:0:6:" + key,
           "staged1:1.2.3.4:65536:6:" + key, "staged1:1.2.3.4:5:0:" + key, "staged1:1.2.3.4:5:6:" + key + "0",
           "staged1:1.2.3.4:5:6:" + std::string(31, 'a') + "g", "staged1:1.2.3.4:5:6:" + key + ":x",
           "staged1:host:5:6:" + key, std::string(4096, 's')}) {
    EXPECT_THROW((void)decode_endpoint(bad), TransportError) << bad;
  }
  for (const std::string& bad :
       std::vector<std::string>{"", "staged1:", "staged1:0:5", "staged1:1", "staged1:1:", "staged1:1:2:3",
                                "staged1:-1:2", "staged1:1:99999999999999999999999", "dipc:1:2"}) {
    EXPECT_THROW((void)decode_descriptor(bad), TransportError) << bad;
  }
}

TEST(StagedCodec, FramesRoundTripInPieces) {
  std::string wire;
  encode(Auth{Key{1, 2, 3}}, wire);
  encode(Hello{1 << 20, 4, "inner-endpoint", "ring"}, wire);
  encode(Request{7, 8, 9, 10}, wire);
  encode(Ready{7, 3}, wire);
  encode(Refused{11, "withdrawn"}, wire);
  encode(Done{3}, wire);
  FrameReader in;
  std::vector<Frame> got;
  for (const char c : wire) {  // one byte at a time: no frame before it is whole
    in.append(&c, 1);
    while (auto f = in.next()) got.push_back(std::move(*f));
  }
  ASSERT_EQ(got.size(), 6u);
  EXPECT_EQ(std::get<Auth>(got[0]).key[2], 3);
  EXPECT_EQ(std::get<Hello>(got[1]).inner_endpoint, "inner-endpoint");
  EXPECT_EQ(std::get<Hello>(got[1]).slots, 4u);
  EXPECT_EQ(std::get<Request>(got[2]).length, 10u);
  EXPECT_EQ(std::get<Ready>(got[3]).slot, 3u);
  EXPECT_EQ(std::get<Refused>(got[4]).reason, "withdrawn");
  EXPECT_EQ(std::get<Done>(got[5]).slot, 3u);
  EXPECT_EQ(in.buffered(), 0u);
}

std::string frame(std::uint32_t len, std::uint8_t type, const std::string& payload) {
  std::string s;
  for (int i = 0; i < 4; ++i) s.push_back(static_cast<char>((len >> (8 * i)) & 0xff));
  s.push_back(static_cast<char>(type));
  return s + payload;
}

TEST(StagedCodec, RejectsMalformedFrames) {
  std::string hello_zero_slots;
  encode(Hello{4096, 0, "a", "b"}, hello_zero_slots);
  for (const std::string& bad : std::vector<std::string>{
           frame(0, 1, ""),                                                            // empty frame
           frame(1u << 30, 1, ""),                                                     // too long
           frame(2, 99, "x"),                                                          // unknown type
           frame(1 + 3, 3, "abc"),                                                     // a truncated request
           frame(1 + 33, 3, std::string(33, 'x')),                                     // a request with trailing bytes
           frame(1 + 8 + 4 + 4, 2, std::string(12, '\1').append("\xff\xff\xff\x7f")),  // string
           hello_zero_slots,
       }) {
    FrameReader in;
    in.append(bad.data(), bad.size());
    EXPECT_THROW((void)in.next(), TransportError);
  }
}

}  // namespace
}  // namespace tensorhub::transport::staged
