// A device_ipc holder in a forked child process, for the device_ipc tests: the child makes its
// own device, TENSORHUB_DEVICE (emulated in ctest: device addresses are PROT_NONE: a host access to them crashes the
// child) and DeviceIpcTransport, fills `mib` MiB of device memory with a pattern (host-to-device copy), exposes it as
// `ranges` adjacent ranges, sends the endpoint and descriptors to the parent over a pipe, then obeys one-byte commands:
// 'w' withdraw (destroy the exposure) and answer 'k'; EOF: exit. kill() sends SIGKILL and reaps the child,
// stop()/resume() send SIGSTOP/SIGCONT. `make` builds the holder's transport in the child (default: device_ipc;
// the staged tests pass a StagedTransport).
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "device_ipc/device_ipc_transport.hpp"
#include "tensorhub/device/device.hpp"

namespace tensorhub::test {

inline std::uint64_t device_pattern(std::uint64_t i, std::uint32_t seed) {
  return (i + 1) * 0x9e3779b97f4a7c15ull ^ (std::uint64_t{seed} << 40);
}
inline std::vector<std::uint64_t> device_pattern_words(std::uint64_t offset, std::uint64_t bytes, std::uint32_t seed) {
  std::vector<std::uint64_t> w(bytes / 8);
  for (std::uint64_t i = 0; i < w.size(); ++i) w[i] = device_pattern(offset / 8 + i, seed);
  return w;
}

using MakeHolderTransport = std::function<std::unique_ptr<transport::Transport>(device::Device&)>;

inline std::unique_ptr<transport::Transport> make_device_ipc_holder(device::Device& d) {
  return std::make_unique<transport::DeviceIpcTransport>(d, transport::DeviceIpcOptions{});
}

class ForkedDeviceHolder {
 public:
  ForkedDeviceHolder(std::uint64_t mib, int ranges, std::uint32_t seed,
                     const MakeHolderTransport& make = make_device_ipc_holder)
      : bytes_(mib << 20) {
    int down[2], up[2];
    if (pipe(down) != 0 || pipe(up) != 0) throw std::runtime_error("pipe failed");
    pid_ = fork();
    if (pid_ < 0) throw std::runtime_error("fork failed");
    if (pid_ == 0) {
      close(down[1]);
      close(up[0]);
      _exit(child(down[0], up[1], ranges, seed, make));
    }
    close(down[0]);
    close(up[1]);
    to_ = down[1];
    from_ = up[0];
    endpoint_ = recv();
    const auto n = std::stoul(recv());
    for (std::size_t i = 0; i < n; ++i) descriptors_.push_back(recv());
  }
  ~ForkedDeviceHolder() {
    if (to_ >= 0) close(to_);
    if (from_ >= 0) close(from_);
    if (pid_ > 0) waitpid(pid_, nullptr, 0);
  }
  ForkedDeviceHolder(const ForkedDeviceHolder&) = delete;
  ForkedDeviceHolder& operator=(const ForkedDeviceHolder&) = delete;

  const std::string& endpoint() const { return endpoint_; }
  const std::vector<std::string>& descriptors() const { return descriptors_; }
  std::uint64_t part() const { return bytes_ / descriptors_.size(); }

  void withdraw() {
    const char c = 'w';
    if (write(to_, &c, 1) != 1) throw std::runtime_error("holder pipe write failed");
    char k = 0;
    if (read(from_, &k, 1) != 1 || k != 'k') throw std::runtime_error("holder did not withdraw");
  }
  void kill() {
    ::kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }
  void stop() { ::kill(pid_, SIGSTOP); }
  void resume() { ::kill(pid_, SIGCONT); }

 private:
  int child(int in, int out, int ranges, std::uint32_t seed, const MakeHolderTransport& make) {
    try {
      auto device = device::make_device_from_env();  // ctest sets TENSORHUB_DEVICE=emulated
      auto holder = make(*device);
      auto& t = *holder;
      auto buffer = device->allocate(bytes_);
      const auto words = device_pattern_words(0, bytes_, seed);
      auto stream = device->create_stream();
      device->copy_async(buffer.get(), words.data(), bytes_, device::CopyKind::kHostToDevice, stream);
      stream.synchronize();
      std::vector<transport::MemoryRange> parts;
      const std::uint64_t part = bytes_ / static_cast<std::uint64_t>(ranges);
      for (int i = 0; i < ranges; ++i) {
        parts.push_back(
            {static_cast<char*>(buffer.get()) + part * static_cast<std::uint64_t>(i), part, MemoryKind::kCuda});
      }
      auto exposure = t.expose(parts);
      send(out, t.endpoint());
      send(out, std::to_string(exposure->descriptors().size()));
      for (const auto& d : exposure->descriptors()) send(out, d);
      char c = 0;
      while (read(in, &c, 1) == 1) {
        if (c == 'w') {
          exposure.reset();
          const char k = 'k';
          if (write(out, &k, 1) != 1) return 3;
        }
      }
      return 0;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "forked device holder: %s\n", e.what());
      return 1;
    }
  }
  static void send(int fd, const std::string& s) {
    const std::string line = s + "\n";
    if (write(fd, line.data(), line.size()) != static_cast<ssize_t>(line.size())) _exit(4);
  }
  std::string recv() {
    std::string s;
    char c = 0;
    for (;;) {
      if (read(from_, &c, 1) != 1) throw std::runtime_error("holder exited before it sent its exposure");
      if (c == '\n') return s;
      s.push_back(c);
    }
  }

  std::uint64_t bytes_;
  pid_t pid_ = -1;
  int to_ = -1;
  int from_ = -1;
  std::string endpoint_;
  std::vector<std::string> descriptors_;
};

}  // namespace tensorhub::test
