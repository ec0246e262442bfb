// XXH3-64: the decomposed implementation shared by the CUDA kernel and the emulated backend
// (lib/device/src/xxh3_core.hpp) equals libxxhash's XXH3_64bits on every length class, around
// every block boundary and on unaligned input; Device::xxh3_64_chunks on the emulated device
// equals XXH3_64bits of each chunk.
#include <gtest/gtest.h>
#include <xxhash.h>

#include <cstdint>
#include <random>
#include <vector>

#include "tensorhub/core/error.hpp"
#include "tensorhub/device/emulated.hpp"
#include "xxh3_core.hpp"

namespace td = tensorhub::device;

namespace {

std::vector<std::uint8_t> random_bytes(std::size_t n, std::uint64_t seed) {
  std::vector<std::uint8_t> v(n);
  std::mt19937_64 rng(seed);
  for (auto& b : v) b = static_cast<std::uint8_t>(rng());
  return v;
}

}  // namespace

TEST(Xxh3Core, EmptyInputKnownAnswer) {
  // XXH3_64bits("", 0) from the xxHash specification's test vectors.
  EXPECT_EQ(td::xxh3::hash(nullptr, 0), 0x2D06800538D394C2ULL);
  EXPECT_EQ(td::xxh3::hash(nullptr, 0), XXH3_64bits(nullptr, 0));
}

TEST(Xxh3Core, EveryLengthUpTo4KiBEqualsLibxxhash) {
  const auto data = random_bytes(4097, 1);
  for (std::size_t n = 0; n <= 4096; ++n) {
    ASSERT_EQ(td::xxh3::hash(data.data(), n), XXH3_64bits(data.data(), n)) << "length " << n;
  }
}

TEST(Xxh3Core, BlockBoundariesAndUnalignedStarts) {
  const auto data = random_bytes((1 << 20) + 128, 2);  // 1024 blocks + 65 bytes + a shift of 7 fit
  for (std::size_t blocks : {1, 2, 15, 16, 17, 127, 128, 129, 1023, 1024}) {
    for (std::ptrdiff_t d : {-65, -64, -63, -1, 0, 1, 63, 64, 65}) {
      const std::size_t n = static_cast<std::size_t>(static_cast<std::ptrdiff_t>(blocks * td::xxh3::kBlock) + d);
      for (std::size_t shift : {0, 1, 7}) {
        ASSERT_EQ(td::xxh3::hash(data.data() + shift, n), XXH3_64bits(data.data() + shift, n))
            << "length " << n << " shift " << shift;
      }
    }
  }
}

TEST(Xxh3Core, LargeInput) {
  const auto data = random_bytes(std::size_t{9} << 20, 3);
  EXPECT_EQ(td::xxh3::hash(data.data(), data.size()), XXH3_64bits(data.data(), data.size()));
}

TEST(DeviceXxh3, EmulatedChunksEqualCpuPerChunk) {
  auto dev = td::make_emulated_device(std::size_t{1} << 30);
  auto stream = dev->create_stream();
  const auto host = random_bytes((std::size_t{3} << 20) + 12345, 4);
  auto buf = dev->allocate(host.size());
  dev->copy_async(buf.get(), host.data(), host.size(), td::CopyKind::kHostToDevice, stream);
  // chunk sizes: 4 MiB (one short chunk), 1 MiB, an odd size, tiny ones (the short paths).
  for (std::size_t chunk : {std::size_t{4} << 20, std::size_t{1} << 20, std::size_t{1000003}, std::size_t{240},
                            std::size_t{17}, std::size_t{3}}) {
    for (std::size_t shift : {0, 5}) {
      const std::size_t bytes = host.size() - shift;
      const auto sums = dev->xxh3_64_chunks(static_cast<std::uint8_t*>(buf.get()) + shift, bytes, chunk, stream);
      ASSERT_EQ(sums.size(), (bytes + chunk - 1) / chunk);
      for (std::size_t c = 0; c < sums.size(); ++c) {
        const std::size_t off = c * chunk;
        ASSERT_EQ(sums[c], XXH3_64bits(host.data() + shift + off, std::min(chunk, bytes - off)))
            << "chunk " << c << " of " << chunk << " bytes, shift " << shift;
      }
    }
  }
  EXPECT_TRUE(dev->xxh3_64_chunks(buf.get(), 0, 4096, stream).empty());
  EXPECT_THROW(dev->xxh3_64_chunks(buf.get(), 16, 0, stream), tensorhub::UserError);
  EXPECT_THROW(dev->xxh3_64_chunks(host.data(), 16, 16, stream), tensorhub::UserError);  // host memory
  EXPECT_THROW(dev->xxh3_64_chunks(buf.get(), host.size() + 1, 4096, stream), tensorhub::UserError);
}
