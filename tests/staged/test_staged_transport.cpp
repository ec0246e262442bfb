// The staged path on the emulated device (label gpu-emu; device addresses are PROT_NONE, so a
// host access to device memory crashes the test): a forked holder's device memory read into
// host memory through its staging ring, pieces larger and smaller than a slot, many reads at
// once, withdrawal, refusals, and the multi transport routing device memory to staged.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "staged_test_util.hpp"
#include "tensorhub/core/error.hpp"

namespace tensorhub::transport {
namespace {

constexpr std::uint64_t kMiB = 1ull << 20;

std::vector<std::uint64_t> words_of(const std::vector<std::uint8_t>& bytes) {
  std::vector<std::uint64_t> w(bytes.size() / 8);
  std::memcpy(w.data(), bytes.data(), w.size() * 8);
  return w;
}

TEST(StagedTransport, ReadsAForkedHoldersDeviceMemoryThroughTheRing) {
  alarm(60);
  test::ForkedDeviceHolder holder(4, 2, 7, test::staged_holder());
  auto device = device::make_device_from_env();
  auto reader = test::make_staged(*device);
  ASSERT_TRUE(reader->reaches(holder.endpoint()));
  const auto part = holder.part();  // 2 MiB: 32 slots' worth each
  std::vector<std::uint8_t> a(part), b(1000 + 8);
  reader->post(ReadOp{holder.endpoint(), holder.descriptors()[0], 0, a.data(), part, 1});
  reader->post(ReadOp{holder.endpoint(), holder.descriptors()[1], 4096, b.data(), b.size(), 2});  // < one slot
  const auto done = test::wait_for(*reader, 2);
  ASSERT_EQ(done.size(), 2u);
  for (const auto& c : done) EXPECT_TRUE(c.ok) << c.error;
  EXPECT_EQ(words_of(a), test::device_pattern_words(0, part, 7));
  EXPECT_EQ(words_of(b), test::device_pattern_words(part + 4096, b.size(), 7));
  EXPECT_EQ(reader->in_flight(), 0u);
}

TEST(StagedTransport, ManyReadsAtOnceShareTheFourSlots) {
  alarm(60);
  test::ForkedDeviceHolder holder(2, 16, 9, test::staged_holder(test::staged_options(16 << 10, 2, 2)));
  auto device = device::make_device_from_env();
  auto reader = test::make_staged(*device);
  std::vector<std::vector<std::uint8_t>> dst(16, std::vector<std::uint8_t>(holder.part()));
  for (std::uint64_t i = 0; i < 16; ++i) {
    reader->post(ReadOp{holder.endpoint(), holder.descriptors()[i], 0, dst[i].data(), holder.part(), i});
  }
  const auto done = test::wait_for(*reader, 16);
  ASSERT_EQ(done.size(), 16u);
  for (const auto& c : done) {
    ASSERT_TRUE(c.ok) << c.error;
    EXPECT_EQ(words_of(dst[c.tag]), test::device_pattern_words(c.tag * holder.part(), holder.part(), 9));
  }
}

TEST(StagedTransport, AWithdrawnRegionIsRefusedNotRead) {
  alarm(60);
  test::ForkedDeviceHolder holder(1, 1, 3, test::staged_holder());
  auto device = device::make_device_from_env();
  auto reader = test::make_staged(*device);
  holder.withdraw();
  std::vector<std::uint8_t> dst(kMiB, 0xAB);
  reader->post(ReadOp{holder.endpoint(), holder.descriptors()[0], 0, dst.data(), kMiB, 5});
  const auto done = test::wait_for(*reader, 1);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_FALSE(done[0].ok);
  EXPECT_NE(done[0].error.find("withdrawn"), std::string::npos) << done[0].error;
  EXPECT_EQ(dst, std::vector<std::uint8_t>(kMiB, 0xAB)) << "nothing of a withdrawn region reaches the reader";
}

TEST(StagedTransport, RefusesBadReadsBeforeSendingThem) {
  test::ForkedDeviceHolder holder(1, 1, 3, test::staged_holder());
  auto device = device::make_device_from_env();
  auto reader = test::make_staged(*device);
  std::vector<std::uint8_t> dst(16);
  EXPECT_THROW(reader->post(ReadOp{holder.endpoint(), holder.descriptors()[0], kMiB - 8, dst.data(), 16, 1}),
               TransportError);  // past the end
  auto dev = device->allocate(16);
  ReadOp into_device{holder.endpoint(), holder.descriptors()[0], 0, dev.get(), 16, 2};
  into_device.dst_memory = MemoryKind::kCuda;
  EXPECT_THROW(reader->post(into_device), TransportError) << "a host path cannot write device memory";
  EXPECT_THROW(reader->post(ReadOp{"staged1:1.2.3.4:0:1:00", holder.descriptors()[0], 0, dst.data(), 16, 3}),
               TransportError);
  EXPECT_FALSE(reader->reaches("dipc:emulated:x"));
  EXPECT_EQ(reader->in_flight(), 0u);
}

TEST(StagedTransport, ExposesOnlyDeviceMemoryOfItsDevice) {
  auto device = device::make_device_from_env();
  auto t = test::make_staged(*device);
  std::vector<std::uint8_t> host(64);
  EXPECT_FALSE(t->can_expose(MemoryRange{host.data(), host.size(), MemoryKind::kHost}));
  EXPECT_FALSE(t->can_expose(MemoryRange{host.data(), host.size(), MemoryKind::kCuda}));
  auto dev = device->allocate(4096);
  EXPECT_TRUE(t->can_expose(MemoryRange{dev.get(), 4096, MemoryKind::kCuda}));
  EXPECT_FALSE(t->can_expose(MemoryRange{dev.get(), 4097, MemoryKind::kCuda})) << "past its allocation";
  const MemoryRange bad{host.data(), host.size(), MemoryKind::kCuda};
  EXPECT_THROW((void)t->expose(std::span(&bad, 1)), UserError);
  EXPECT_FALSE(t->can_read_into(t->endpoint(), "staged1:1:64", MemoryKind::kCuda));
  EXPECT_TRUE(t->can_read_into(t->endpoint(), "staged1:1:64", MemoryKind::kHost));
}

// A process reads its own staged exposure (its server answers on its own thread).
TEST(StagedTransport, ReadsItsOwnExposure) {
  auto device = device::make_device_from_env();
  auto t = test::make_staged(*device);
  auto dev = device->allocate(300 << 10);
  const auto words = test::device_pattern_words(0, 300 << 10, 4);
  auto s = device->create_stream();
  device->copy_async(dev.get(), words.data(), 300 << 10, device::CopyKind::kHostToDevice, s);
  s.synchronize();
  const MemoryRange r{dev.get(), 300 << 10, MemoryKind::kCuda};
  auto e = t->expose(std::span(&r, 1));
  std::vector<std::uint8_t> back(300 << 10);
  t->post(ReadOp{t->endpoint(), e->descriptors()[0], 0, back.data(), back.size(), 9});
  const auto done = test::wait_for(*t, 1);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_TRUE(done[0].ok) << done[0].error;
  EXPECT_EQ(words_of(back), words);
  EXPECT_GE(t->served(), 5u) << "300 KiB in 64 KiB slots";
}

}  // namespace
}  // namespace tensorhub::transport
