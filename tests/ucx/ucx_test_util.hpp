// Shared by the ucx tests, the peer processes they start (ucx_peer.cpp) and bench_ucx_read:
// a verifiable byte pattern, length-prefixed strings over a socket, and PeerProcess, which
// fork+execs ucx_peer and always kills and reaps it.
#pragma once

#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

namespace tensorhub::test {

// Word i of the pattern with `seed`: every 8 bytes differ, every holder's bytes differ.
inline std::uint64_t pattern_word(std::uint64_t i, std::uint32_t seed) {
  std::uint64_t x = (i + 1) * 0x9E3779B97F4A7C15ull ^ (static_cast<std::uint64_t>(seed) << 32);
  x ^= x >> 29;
  return x;
}

inline void fill_pattern(void* p, std::uint64_t bytes, std::uint32_t seed) {
  auto* w = static_cast<std::uint64_t*>(p);
  for (std::uint64_t i = 0; i < bytes / 8; ++i) w[i] = pattern_word(i, seed);
}

// Does `p` hold bytes [offset, offset + bytes) of the pattern (offset and bytes multiples of 8)?
inline bool check_pattern(const void* p, std::uint64_t offset, std::uint64_t bytes, std::uint32_t seed) {
  const auto* w = static_cast<const std::uint64_t*>(p);
  for (std::uint64_t i = 0; i < bytes / 8; ++i) {
    if (w[i] != pattern_word(offset / 8 + i, seed)) return false;
  }
  return true;
}

inline void write_all(int fd, const void* p, std::size_t n) {
  const auto* c = static_cast<const char*>(p);
  while (n > 0) {
    const ssize_t r = ::write(fd, c, n);
    if (r <= 0) throw std::runtime_error("write to the holder socket failed");
    c += r;
    n -= static_cast<std::size_t>(r);
  }
}

// Reads exactly n bytes, waiting at most `limit` in all.
inline void read_all(int fd, void* p, std::size_t n, std::chrono::milliseconds limit) {
  auto* c = static_cast<char*>(p);
  const auto end = std::chrono::steady_clock::now() + limit;
  while (n > 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now());
    pollfd pfd{fd, POLLIN, 0};
    if (left.count() <= 0 || ::poll(&pfd, 1, static_cast<int>(left.count())) <= 0) {
      throw std::runtime_error("timed out reading from the holder socket");
    }
    const ssize_t r = ::read(fd, c, n);
    if (r <= 0) throw std::runtime_error("holder socket closed");
    c += r;
    n -= static_cast<std::size_t>(r);
  }
}

inline void send_string(int fd, const std::string& s) {
  const auto n = static_cast<std::uint32_t>(s.size());
  write_all(fd, &n, sizeof n);
  write_all(fd, s.data(), s.size());
}

inline std::string recv_string(int fd, std::chrono::milliseconds limit) {
  std::uint32_t n = 0;
  read_all(fd, &n, sizeof n, limit);
  std::string s(n, '\0');
  read_all(fd, s.data(), n, limit);
  return s;
}

// A child process running ucx_peer (fork+exec) with a socketpair on its fd 3. The destructor
// SIGKILLs and reaps it (a stopped process too); ucx_peer also exits when the socket closes.
class PeerProcess {
 public:
  PeerProcess(const char* exe, const std::vector<std::string>& args) {
    std::vector<const char*> argv{exe};
    for (const auto& a : args) argv.push_back(a.c_str());
    argv.push_back(nullptr);
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) throw std::runtime_error("socketpair");
    pid_ = ::fork();
    if (pid_ < 0) throw std::runtime_error("fork");
    if (pid_ == 0) {
      // Only async-signal-safe calls before exec: the parent may run UCX threads.
      ::dup2(sv[1], 3);  // dup2 clears FD_CLOEXEC on 3
      ::close_range(4, ~0U, 0);
      ::execv(exe, const_cast<char* const*>(argv.data()));
      ::_exit(127);
    }
    ::close(sv[1]);
    fd_ = sv[0];
  }
  ~PeerProcess() { stop(); }
  PeerProcess(const PeerProcess&) = delete;
  PeerProcess& operator=(const PeerProcess&) = delete;

  int fd() const { return fd_; }
  pid_t pid() const { return pid_; }
  void signal(int sig) const { ::kill(pid_, sig); }
  void stop() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
      pid_ = -1;
    }
    if (fd_ >= 0) {
      ::close(fd_);
      fd_ = -1;
    }
  }

 private:
  pid_t pid_ = -1;
  int fd_ = -1;
};

// A child process that spins on one CPU until destroyed: load beside a fault test.
class CpuHog {
 public:
  CpuHog() {
    pid_ = ::fork();
    if (pid_ < 0) throw std::runtime_error("fork");
    if (pid_ == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlives a test binary that died
      volatile std::uint64_t spins = 0;
      for (;;) {
        const std::uint64_t next = spins + 1;
        spins = next;
      }
    }
  }
  ~CpuHog() {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  CpuHog(const CpuHog&) = delete;
  CpuHog& operator=(const CpuHog&) = delete;

 private:
  pid_t pid_ = -1;
};

// `ucx_peer hold`: a process exposing `mib` MiB of pattern `seed` as `ranges` adjacent ranges
// through its own UcxTransport; its endpoint and descriptors arrive over the socket.
class HolderProcess : public PeerProcess {
 public:
  HolderProcess(const char* exe, std::uint64_t mib, int ranges, std::uint32_t seed)
      : PeerProcess(exe, {"hold", std::to_string(mib), std::to_string(ranges), std::to_string(seed)}) {
    endpoint_ = recv_string(fd(), std::chrono::seconds(30));
    const auto count = std::stoul(recv_string(fd(), std::chrono::seconds(5)));
    for (std::size_t i = 0; i < count; ++i) descriptors_.push_back(recv_string(fd(), std::chrono::seconds(5)));
  }

  const std::string& endpoint() const { return endpoint_; }
  const std::vector<std::string>& descriptors() const { return descriptors_; }

 private:
  std::string endpoint_;
  std::vector<std::string> descriptors_;
};

// `ucx_peer read`: a process reading the given regions (each `part_bytes`) again and again in
// 4 MiB chunks until killed; construction returns once its first full pass succeeded.
class ReaderProcess : public PeerProcess {
 public:
  ReaderProcess(const char* exe, const std::string& endpoint, const std::vector<std::string>& descriptors,
                std::uint64_t part_bytes)
      : PeerProcess(exe, {"read", std::to_string(part_bytes)}) {
    send_string(fd(), endpoint);
    send_string(fd(), std::to_string(descriptors.size()));
    for (const auto& d : descriptors) send_string(fd(), d);
    char streaming = 0;
    read_all(fd(), &streaming, 1, std::chrono::seconds(30));
  }
};

}  // namespace tensorhub::test
