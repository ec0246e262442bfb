// A cma holder in a forked child process, for the cma tests: the child creates its own
// CmaTransport, fills `mib` MiB with a pattern, exposes it as `ranges` adjacent ranges, sends the
// endpoint and descriptors to the parent over a pipe, then obeys one-byte commands:
//   'w' withdraw (destroy the exposure) and answer 'k';   EOF: exit.
// The parent (the test) reads with its own transport. kill() sends SIGKILL and reaps the child.
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "cma/cma_transport.hpp"

namespace tensorhub::test {

inline std::uint64_t pattern_word(std::uint64_t i, std::uint32_t seed) {
  return (i + 1) * 0x9e3779b97f4a7c15ull ^ (std::uint64_t{seed} << 40);
}
inline bool check_pattern(const void* p, std::uint64_t offset, std::uint64_t bytes, std::uint32_t seed) {
  const auto* w = static_cast<const std::uint64_t*>(p);
  for (std::uint64_t i = 0; i < bytes / 8; ++i) {
    if (w[i] != pattern_word(offset / 8 + i, seed)) return false;
  }
  return true;
}

class ForkedHolder {
 public:
  ForkedHolder(std::uint64_t mib, int ranges, std::uint32_t seed) : bytes_(mib << 20) {
    int down[2], up[2];
    if (pipe(down) != 0 || pipe(up) != 0) throw std::runtime_error("pipe failed");
    pid_ = fork();
    if (pid_ < 0) throw std::runtime_error("fork failed");
    if (pid_ == 0) {
      close(down[1]);
      close(up[0]);
      _exit(child(down[0], up[1], ranges, seed));
    }
    close(down[0]);
    close(up[1]);
    to_ = down[1];
    from_ = up[0];
    endpoint_ = recv();
    const auto n = std::stoul(recv());
    for (std::size_t i = 0; i < n; ++i) descriptors_.push_back(recv());
  }
  ~ForkedHolder() {
    if (to_ >= 0) close(to_);
    if (from_ >= 0) close(from_);
    if (pid_ > 0) waitpid(pid_, nullptr, 0);
  }
  ForkedHolder(const ForkedHolder&) = delete;
  ForkedHolder& operator=(const ForkedHolder&) = delete;

  const std::string& endpoint() const { return endpoint_; }
  const std::vector<std::string>& descriptors() const { return descriptors_; }
  std::uint64_t part() const { return bytes_ / descriptors_.size(); }
  pid_t pid() const { return pid_; }

  void withdraw() {
    const char c = 'w';
    if (write(to_, &c, 1) != 1) throw std::runtime_error("holder pipe write failed");
    char k = 0;
    if (read(from_, &k, 1) != 1 || k != 'k') throw std::runtime_error("holder did not withdraw");
  }
  // SIGKILL; reaped unless `reap` is false (then the pid stays a zombie until the destructor).
  void kill(bool reap = true) {
    ::kill(pid_, SIGKILL);
    siginfo_t info{};
    waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOWAIT);  // dead (a zombie) from here on
    if (reap) {
      waitpid(pid_, nullptr, 0);
      pid_ = -1;
    }
  }

 private:
  int child(int in, int out, int ranges, std::uint32_t seed) {
    try {
      transport::CmaOptions o;
      o.threads = 1;
      transport::CmaTransport t(o);
      auto* buf = static_cast<std::uint64_t*>(t.allocate(bytes_));
      for (std::uint64_t i = 0; i < bytes_ / 8; ++i) buf[i] = pattern_word(i, seed);
      std::vector<transport::MemoryRange> parts;
      const std::uint64_t part = bytes_ / static_cast<std::uint64_t>(ranges);
      for (int i = 0; i < ranges; ++i) {
        parts.push_back({reinterpret_cast<char*>(buf) + part * static_cast<std::uint64_t>(i), part});
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
      std::fprintf(stderr, "forked holder: %s\n", e.what());
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
