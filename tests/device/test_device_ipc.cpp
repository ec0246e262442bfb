// Emulated device IPC across processes: a forked child imports the parent's export, reads the
// bytes, hashes them on its device, writes a pattern back that the parent then sees; an import
// after the exporter exited fails with DeviceError; handles are checked against the device.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>
#include <xxhash.h>

#include <cstdint>
#include <cstdlib>
#include <numeric>
#include <vector>

#include "tensorhub/core/error.hpp"
#include "tensorhub/device/emulated.hpp"

namespace td = tensorhub::device;

namespace {

constexpr std::size_t kBytes = (std::size_t{2} << 20) + 4096;
constexpr std::size_t kOffset = 8192;  // the exported pointer lies inside its allocation

// The child's checks; its exit status says which failed (0: all passed).
int child(const std::string& text, std::uint64_t expected_sum) {
  try {
    auto dev = td::make_emulated_device(std::size_t{1} << 30);
    auto stream = dev->create_stream();
    const td::IpcHandle h = td::IpcHandle::decode(text);
    td::IpcMapping m = dev->import_ipc(h);
    if (m.size() != kBytes || m.data() != static_cast<std::uint8_t*>(m.base()) + kOffset) return 2;
    if (!dev->query(m.data()).is_device || dev->query(m.data()).base != m.base()) return 3;
    const auto sums = dev->xxh3_64_chunks(m.data(), kBytes - kOffset, kBytes, stream);
    if (sums.size() != 1 || sums[0] != expected_sum) return 4;
    std::vector<std::uint8_t> host(kBytes - kOffset);
    dev->copy_async(host.data(), m.data(), host.size(), td::CopyKind::kDeviceToHost, stream);
    stream.synchronize();
    for (std::size_t i = 0; i < host.size(); ++i) {
      if (host[i] != static_cast<std::uint8_t>(i + kOffset)) return 5;
    }
    dev->fill_async(m.data(), 0xAB, 4096, stream);
    stream.synchronize();
    return 0;
  } catch (const std::exception&) {
    return 6;
  }
}

int wait_status(pid_t pid) {
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 100 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

}  // namespace

TEST(EmulatedIpc, AnotherProcessReadsAndWritesTheExportedAllocation) {
  auto dev = td::make_emulated_device(std::size_t{1} << 30);
  auto stream = dev->create_stream();
  auto buf = dev->allocate(kBytes);
  std::vector<std::uint8_t> host(kBytes);
  std::iota(host.begin(), host.end(), std::uint8_t{0});
  dev->copy_async(buf.get(), host.data(), host.size(), td::CopyKind::kHostToDevice, stream);
  stream.synchronize();
  auto* exported = static_cast<std::uint8_t*>(buf.get()) + kOffset;
  const td::IpcHandle h = dev->export_ipc(exported);
  EXPECT_EQ(h.size, kBytes);
  EXPECT_EQ(h.offset, kOffset);
  const std::uint64_t sum = XXH3_64bits(host.data() + kOffset, kBytes - kOffset);
  const std::string text = h.encode();
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) std::_Exit(child(text, sum));
  ASSERT_EQ(wait_status(pid), 0) << "child check failed (see child() for the codes)";
  std::vector<std::uint8_t> back(4096);
  dev->copy_async(back.data(), exported, back.size(), td::CopyKind::kDeviceToHost, stream);
  stream.synchronize();
  EXPECT_EQ(back, std::vector<std::uint8_t>(4096, 0xAB)) << "the child's write is not visible to the exporter";
}

TEST(EmulatedIpc, ImportAfterTheExporterExitedFails) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    auto dev = td::make_emulated_device(std::size_t{1} << 30);
    auto buf = dev->allocate(65536);
    const std::string text = dev->export_ipc(buf.get()).encode();
    const bool ok = ::write(fds[1], text.data(), text.size()) == static_cast<ssize_t>(text.size());
    std::_Exit(ok ? 0 : 1);
  }
  ::close(fds[1]);
  std::string text(256, '\0');
  const ssize_t n = ::read(fds[0], text.data(), text.size());
  ::close(fds[0]);
  ASSERT_GT(n, 0);
  text.resize(static_cast<std::size_t>(n));
  ASSERT_EQ(wait_status(pid), 0);
  auto dev = td::make_emulated_device(std::size_t{1} << 30);
  EXPECT_THROW(dev->import_ipc(td::IpcHandle::decode(text)), tensorhub::DeviceError);
}

TEST(EmulatedIpc, HandlesOfAnotherBackendAreRefused) {
  auto dev = td::make_emulated_device(std::size_t{1} << 30);
  td::IpcHandle h;
  h.backend = td::BackendKind::kCuda;
  h.size = 4096;
  EXPECT_THROW(dev->import_ipc(h), tensorhub::UserError);
}

TEST(EmulatedIpc, ImportInTheExportingProcessSharesTheBytes) {
  auto dev = td::make_emulated_device(std::size_t{1} << 30);
  auto stream = dev->create_stream();
  auto buf = dev->allocate(4096);
  td::IpcMapping m = dev->import_ipc(dev->export_ipc(buf.get()));
  EXPECT_NE(m.base(), buf.get());  // another device address, the same memfd
  dev->fill_async(buf.get(), 0x5A, 4096, stream);
  std::vector<std::uint8_t> back(4096);
  dev->copy_async(back.data(), m.data(), back.size(), td::CopyKind::kDeviceToHost, stream);
  stream.synchronize();
  EXPECT_EQ(back, std::vector<std::uint8_t>(4096, 0x5A));
}
