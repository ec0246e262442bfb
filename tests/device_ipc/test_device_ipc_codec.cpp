// The device_ipc endpoint and descriptor codec (device_ipc/codec.hpp): round trips, and hostile
// input that must end in TransportError, never a crash or a wrong decode.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "device_ipc/codec.hpp"
#include "tensorhub/core/error.hpp"

namespace tensorhub::transport::device_ipc {
namespace {

EndpointText sample_endpoint() {
  EndpointText e;
  e.backend = device::BackendKind::kCuda;
  e.holder.host.hostname = "node-7";
  e.holder.host.boot_id = "0123abcd-0123-4567-89ab-0123456789ab";
  e.holder.host.pid_ns = 4026531836;
  e.holder.pid = 4242;
  e.holder.start_time = 123456;
  e.holder.table = 0x7f00'0000'1000;
  e.holder.slots = 64;
  return e;
}

DescriptorText sample_descriptor() {
  DescriptorText d;
  d.address = 0x7e00'0001'0000;
  d.bytes = 4096;
  d.slot = 3;
  d.generation = 0xabc;
  device::IpcHandle h;
  h.backend = device::BackendKind::kEmulated;
  h.size = 1 << 20;
  h.offset = 8192;
  h.bytes[0] = 0x5a;
  d.ipc = h;
  return d;
}

TEST(DeviceIpcCodec, EndpointRoundTrip) {
  const auto text = encode_endpoint(sample_endpoint());
  EXPECT_TRUE(text.starts_with("dipc:cuda:cma:node-7:"));
  const auto back = decode_endpoint(text);
  EXPECT_EQ(back.backend, device::BackendKind::kCuda);
  EXPECT_EQ(back.holder.pid, 4242);
  EXPECT_EQ(back.holder.start_time, 123456u);
  EXPECT_EQ(back.holder.table, 0x7f00'0000'1000u);
  EXPECT_EQ(back.holder.host.boot_id, sample_endpoint().holder.host.boot_id);
}

TEST(DeviceIpcCodec, DescriptorRoundTrip) {
  const auto back = decode_descriptor(encode_descriptor(sample_descriptor()));
  EXPECT_EQ(back.address, 0x7e00'0001'0000u);
  EXPECT_EQ(back.bytes, 4096u);
  EXPECT_EQ(back.slot, 3u);
  EXPECT_EQ(back.generation, 0xabcu);
  ASSERT_TRUE(back.ipc.has_value());
  EXPECT_EQ(back.ipc->offset, 8192u);
  EXPECT_EQ(back.ipc->size, 1u << 20);
  EXPECT_EQ(back.ipc->bytes[0], 0x5a);
  DescriptorText empty;  // a 0-byte range carries no handle
  empty.generation = 1;
  EXPECT_FALSE(decode_descriptor(encode_descriptor(empty)).ipc.has_value());
}

TEST(DeviceIpcCodec, MalformedEndpointsAreRefused) {
  const auto good = encode_endpoint(sample_endpoint());
  const std::string cma_part = good.substr(std::string("dipc:cuda:").size());
  const std::vector<std::string> bad = {
      "",
      "dipc:",
      "dipc:cuda",
      "dipc:cuda:",
      "dipc:rocm:" + cma_part,                           // unknown backend
      "dipc::" + cma_part,                               // empty backend
      "cma:" + cma_part,                                 // not ours
      "dipc:cuda:" + cma_part.substr(0, 20),             // cut short
      "dipc:cuda:" + cma_part + ":extra",                // one field too many
      good + std::string(70000, 'x'),                    // too long
      "dipc:emulated:cma:h:not-a-boot-id:1:2:3:1000:8",  // bad boot id
  };
  for (const auto& t : bad) EXPECT_THROW(decode_endpoint(t), TransportError) << t.substr(0, 100);
  EXPECT_FALSE(looks_like_endpoint("cma:x"));
}

TEST(DeviceIpcCodec, MalformedDescriptorsAreRefused) {
  const auto good = encode_descriptor(sample_descriptor());
  const auto handle = good.substr(good.find("thipc1:"));
  auto too_big = sample_descriptor();
  too_big.bytes = (1 << 20) - 8192 + 1;  // one byte past the allocation
  auto wrapped = sample_descriptor();
  wrapped.address = ~0ull - 10;
  const std::vector<std::string> bad = {
      "",
      "dipc:",
      "dipc:1000:4096:3:abc",                                  // no handle
      "dipc:1000:4096:3:abc:",                                 // empty handle
      "dipc:1000:4096:3:abc:-",                                // no handle for a non-empty range
      "dipc:1000:4096:3:0:" + handle,                          // generation 0
      "dipc:1000:4096:99999999:abc:" + handle,                 // slot out of range
      "dipc:zz:4096:3:abc:" + handle,                          // bad address
      "dipc:1000:-1:3:abc:" + handle,                          // bad size
      "dipc:1000:4096:3:abc:" + handle + "00",                 // handle too long
      "dipc:1000:4096:3:abc:" + handle.substr(0, 50),          // handle cut short
      "dipc:1000:4096:3:abc:thipc1:" + std::string(171, 'g'),  // not hex
      encode_descriptor(too_big),
      encode_descriptor(wrapped),
      "cma:1000:4096:3:abc",
      good + std::string(70000, '0'),
  };
  for (const auto& t : bad) EXPECT_THROW(decode_descriptor(t), TransportError) << t.substr(0, 100);
  // Every prefix of a valid descriptor but the whole is refused, none crashes.
  for (std::size_t n = 0; n < good.size(); ++n) EXPECT_THROW(decode_descriptor(good.substr(0, n)), TransportError) << n;
}

}  // namespace
}  // namespace tensorhub::transport::device_ipc
