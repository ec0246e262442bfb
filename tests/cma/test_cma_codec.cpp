// The cma endpoint and descriptor text: round trips, and hostile input refused (never a crash).
#include <gtest/gtest.h>

#include <initializer_list>
#include <random>
#include <string>

#include "cma/codec.hpp"
#include "tensorhub/core/error.hpp"

namespace tensorhub::transport::cma {
namespace {

EndpointText sample_endpoint() {
  EndpointText e;
  e.host = {"node-7", "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", 4026531836};
  e.pid = 4242;
  e.start_time = 123456789;
  e.table = 0x7f12'3456'7000;
  e.slots = kMaxSlots;
  return e;
}

TEST(CmaCodec, EndpointRoundTrip) {
  const auto e = sample_endpoint();
  const auto text = encode_endpoint(e);
  EXPECT_TRUE(looks_like_endpoint(text));
  const auto back = decode_endpoint(text);
  EXPECT_EQ(back.host.hostname, e.host.hostname);
  EXPECT_EQ(back.host.boot_id, e.host.boot_id);
  EXPECT_EQ(back.host.pid_ns, e.host.pid_ns);
  EXPECT_EQ(back.pid, e.pid);
  EXPECT_EQ(back.start_time, e.start_time);
  EXPECT_EQ(back.table, e.table);
  EXPECT_EQ(back.slots, e.slots);
  EXPECT_EQ(label(back), "node-7/4242");
}

TEST(CmaCodec, DescriptorRoundTrip) {
  const DescriptorText d{0x7f00'dead'b000, 1ull << 30, 17, 0xabcdef0123};
  const auto back = decode_descriptor(encode_descriptor(d));
  EXPECT_EQ(back.address, d.address);
  EXPECT_EQ(back.bytes, d.bytes);
  EXPECT_EQ(back.slot, d.slot);
  EXPECT_EQ(back.generation, d.generation);
}

TEST(CmaCodec, MalformedEndpointsRefused) {
  const std::string good = encode_endpoint(sample_endpoint());
  const std::string boot = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0";
  for (const std::string& bad : std::initializer_list<std::string>{
           std::string(""), std::string("cma:"), std::string("ucx:a:b"), good + ":1",
           good.substr(0, good.size() - 1) + "x",
           "cma:h:" + boot + ":1:0:1:7f0000:1",                              // pid 0
           "cma:h:" + boot + ":1:99999999:1:7f0000:1",                       // pid > PID_MAX_LIMIT
           "cma:h:" + boot + ":1:5:1:7f0000:0",                              // no slots
           "cma:h:" + boot + ":1:5:1:7f0000:65537",                          // too many slots
           "cma:h:" + boot + ":1:5:1:7f0001:1",                              // misaligned table
           "cma:h:" + boot + ":1:5:1:0:1",                                   // null table
           "cma:h:" + boot + ":1:5:1:1ffffffffffffff8:4",                    // table past user space
           "cma:h:" + boot.substr(1) + ":1:5:1:7f0000:1",                    // short boot id
           "cma:h:" + std::string(36, 'Z') + ":1:5:1:7f0000:1",              // not a boot id
           "cma::" + boot + ":1:5:1:7f0000:1",                               // empty host
           "cma:h:" + boot + ":-1:5:1:7f0000:1",                             // negative
           "cma:h:" + boot + ":1:5:1:7f0000:1 ",                             // trailing space
           "cma:" + std::string(300, 'h') + ":" + boot + ":1:5:1:7f0000:1",  // host too long
       }) {
    EXPECT_THROW((void)decode_endpoint(bad), TransportError) << bad;
  }
}

TEST(CmaCodec, MalformedDescriptorsRefused) {
  for (const std::string& bad : std::initializer_list<std::string>{
           "",
           "cma:",
           "cma:1:2:3",
           "cma:1:2:3:4:5",
           "cma:zz:2:3:4",
           "cma:1000:2:3:0",                     // generation 0
           "cma:1000:2:65536:4",                 // slot too big
           "cma:1000:18446744073709551615:1:4",  // address + bytes overflow
           "cma:200000000000000:1:1:4",          // address past user space
           "cma:1000::1:4",
           "cma:1000:2:1:4:",
           "local:1:2",
           "cma:1000:-2:1:4",
           "cma:0x1000:2:1:4",
       }) {
    EXPECT_THROW((void)decode_descriptor(bad), TransportError) << bad;
  }
}

// Random mutations of valid texts: each is refused or decodes to in-range values.
TEST(CmaCodec, FuzzedInputNeverCrashes) {
  std::mt19937_64 rng(7);
  const std::string seeds[] = {encode_endpoint(sample_endpoint()), encode_descriptor({0x1000, 4096, 3, 9})};
  const std::string alphabet = "0123456789abcdefxyz:-_ \n\0";
  for (int i = 0; i < 20000; ++i) {
    std::string s = seeds[i % 2];
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < edits; ++k) {
      const auto at = rng() % (s.size() + 1);
      switch (rng() % 3) {
        case 0:
          s.insert(at, 1, alphabet[rng() % alphabet.size()]);
          break;
        case 1:
          if (at < s.size()) s.erase(at, 1);
          break;
        default:
          if (at < s.size()) s[at] = alphabet[rng() % alphabet.size()];
          break;
      }
    }
    try {
      const auto e = decode_endpoint(s);
      EXPECT_GT(e.pid, 0);
      EXPECT_LE(e.slots, kMaxSlots);
    } catch (const TransportError&) {
    }
    try {
      const auto d = decode_descriptor(s);
      EXPECT_NE(d.generation, 0u);
      EXPECT_LT(d.slot, kMaxSlots);
      EXPECT_LE(d.address + d.bytes, kMaxAddress);
    } catch (const TransportError&) {
    }
  }
}

}  // namespace
}  // namespace tensorhub::transport::cma
