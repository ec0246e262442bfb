// The cuda backend on a real GPU (label gpu; registered only with -DTENSORHUB_GPU_TESTS=ON):
// copies, pointer queries of interior pointers, XXH3-64 per chunk equal to the CPU's, events
// across streams, and IPC into a second process (this binary re-executed with --ipc-child, since
// a CUDA context does not survive fork). Fails, never skips, when no device exists: the script
// that registers it runs on a GPU machine.
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>
#include <xxhash.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "tensorhub/core/error.hpp"
#include "tensorhub/device/device.hpp"

extern char** environ;
namespace td = tensorhub::device;

namespace {

std::vector<std::uint8_t> random_bytes(std::size_t n, std::uint64_t seed) {
  std::vector<std::uint8_t> v(n);
  std::mt19937_64 rng(seed);
  for (auto& b : v) b = static_cast<std::uint8_t>(rng());
  return v;
}

std::string self_exe() {
  char buf[4096];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string();
}

constexpr std::size_t kIpcBytes = std::size_t{64} << 20;
constexpr std::size_t kIpcOffset = 1 << 20;

// --ipc-child <handle> <sum>: import, check the sum on the device, write 0xCD over the first
// 1 MiB of the exported range. Exit status 0 when every check passed.
int ipc_child(const char* text, const char* sum_text) {
  try {
    auto dev = td::make_device("cuda");
    auto stream = dev->create_stream();
    td::IpcMapping m = dev->import_ipc(td::IpcHandle::decode(text));
    const std::uint64_t want = std::stoull(sum_text, nullptr, 16);
    const auto sums = dev->xxh3_64_chunks(m.data(), kIpcBytes - kIpcOffset, kIpcBytes, stream);
    if (sums.size() != 1 || sums[0] != want) {
      std::fprintf(stderr, "ipc child: device xxh3 of the imported range differs\n");
      return 3;
    }
    dev->fill_async(m.data(), 0xCD, 1 << 20, stream);
    stream.synchronize();
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ipc child: %s\n", e.what());
    return 2;
  }
}

class Cuda : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_GT(td::cuda_device_count(), 0) << "gpu tests need a CUDA device (registered by -DTENSORHUB_GPU_TESTS=ON)";
    dev = td::make_device("cuda");
  }
  std::unique_ptr<td::Device> dev;
};

}  // namespace

TEST_F(Cuda, CopiesRoundTrip) {
  auto stream = dev->create_stream();
  const auto src = random_bytes(10'000'019, 1);
  auto a = dev->allocate(src.size());
  auto b = dev->allocate(src.size());
  std::vector<std::uint8_t> back(src.size());
  dev->copy_async(a.get(), src.data(), src.size(), td::CopyKind::kHostToDevice, stream);
  dev->copy_async(b.get(), a.get(), src.size(), td::CopyKind::kDeviceToDevice, stream);
  dev->copy_async(back.data(), b.get(), src.size(), td::CopyKind::kDeviceToHost, stream);
  stream.synchronize();
  EXPECT_EQ(back, src);
}

TEST_F(Cuda, QueryGivesTheAllocationOfAnInteriorPointer) {
  auto a = dev->allocate(std::size_t{6} << 20);
  const td::PointerInfo info = dev->query(static_cast<std::uint8_t*>(a.get()) + 777);
  EXPECT_TRUE(info.is_device);
  EXPECT_EQ(info.ordinal, dev->ordinal());
  EXPECT_EQ(info.base, a.get());
  EXPECT_GE(info.size, std::size_t{6} << 20);
  std::vector<int> host(4);
  EXPECT_FALSE(dev->query(host.data()).is_device);
}

TEST_F(Cuda, Xxh3ChunksEqualCpu) {
  auto stream = dev->create_stream();
  const auto host = random_bytes((std::size_t{37} << 20) + 4321, 2);
  auto buf = dev->allocate(host.size());
  dev->copy_async(buf.get(), host.data(), host.size(), td::CopyKind::kHostToDevice, stream);
  for (std::size_t chunk : {std::size_t{4} << 20, std::size_t{1} << 20, std::size_t{3000017}, std::size_t{129 * 1024},
                            std::size_t{1024}, std::size_t{241}, std::size_t{240}, std::size_t{16}, std::size_t{1}}) {
    for (std::size_t shift : {0, 3}) {
      const std::size_t bytes = (chunk < 1024 ? (std::size_t{1} << 20) : host.size()) - shift;
      const auto sums = dev->xxh3_64_chunks(static_cast<std::uint8_t*>(buf.get()) + shift, bytes, chunk, stream);
      ASSERT_EQ(sums.size(), (bytes + chunk - 1) / chunk);
      for (std::size_t c = 0; c < sums.size(); ++c) {
        const std::size_t off = c * chunk;
        ASSERT_EQ(sums[c], XXH3_64bits(host.data() + shift + off, std::min(chunk, bytes - off)))
            << "chunk " << c << " of " << chunk << " bytes, shift " << shift;
      }
    }
  }
}

TEST_F(Cuda, Xxh3RefusesRangesOutsideOneAllocation) {
  auto stream = dev->create_stream();
  auto buf = dev->allocate(std::size_t{2} << 20);  // a multiple of the allocation granularity
  std::vector<std::uint8_t> host(4096);
  EXPECT_THROW(dev->xxh3_64_chunks(host.data(), host.size(), 1024, stream), tensorhub::UserError);
  EXPECT_THROW(dev->xxh3_64_chunks(buf.get(), (std::size_t{2} << 20) + 1, 4096, stream), tensorhub::UserError);
  EXPECT_EQ(dev->xxh3_64_chunks(buf.get(), 4096, 4096, stream).size(), 1U);  // the context is still usable
}

TEST_F(Cuda, EventOrdersTwoStreams) {
  auto s1 = dev->create_stream();
  auto s2 = dev->create_stream();
  const auto src = random_bytes(std::size_t{32} << 20, 3);
  auto a = dev->allocate(src.size());
  auto b = dev->allocate(src.size());
  dev->copy_async(a.get(), src.data(), src.size(), td::CopyKind::kHostToDevice, s1);
  auto e = dev->create_event();
  e.record(s1);
  e.make_wait(s2);
  dev->copy_async(b.get(), a.get(), src.size(), td::CopyKind::kDeviceToDevice, s2);
  std::vector<std::uint8_t> back(src.size());
  dev->copy_async(back.data(), b.get(), src.size(), td::CopyKind::kDeviceToHost, s2);
  s2.synchronize();
  EXPECT_TRUE(e.ready());
  EXPECT_EQ(back, src);
}

TEST_F(Cuda, IpcIntoAnotherProcess) {
  auto stream = dev->create_stream();
  const auto host = random_bytes(kIpcBytes, 4);
  auto buf = dev->allocate(kIpcBytes);
  dev->copy_async(buf.get(), host.data(), host.size(), td::CopyKind::kHostToDevice, stream);
  stream.synchronize();
  auto* exported = static_cast<std::uint8_t*>(buf.get()) + kIpcOffset;
  const td::IpcHandle h = dev->export_ipc(exported);
  EXPECT_EQ(h.offset, kIpcOffset);
  char sum[32];
  std::snprintf(sum, sizeof sum, "%llx",
                static_cast<unsigned long long>(XXH3_64bits(host.data() + kIpcOffset, kIpcBytes - kIpcOffset)));
  const std::string exe = self_exe();
  const std::string text = h.encode();
  std::vector<char*> argv = {const_cast<char*>(exe.c_str()), const_cast<char*>("--ipc-child"),
                             const_cast<char*>(text.c_str()), sum, nullptr};
  pid_t pid = 0;
  ASSERT_EQ(::posix_spawn(&pid, exe.c_str(), nullptr, nullptr, argv.data(), environ), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "ipc child failed, status " << status;
  std::vector<std::uint8_t> back(1 << 20);
  dev->copy_async(back.data(), exported, back.size(), td::CopyKind::kDeviceToHost, stream);
  stream.synchronize();
  EXPECT_EQ(back, std::vector<std::uint8_t>(1 << 20, 0xCD));
}

int main(int argc, char** argv) {
  if (argc == 4 && std::strcmp(argv[1], "--ipc-child") == 0) return ipc_child(argv[2], argv[3]);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
