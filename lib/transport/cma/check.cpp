#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "holder.hpp"
#include "identity.hpp"
#include "tensorhub/core/error.hpp"
#include "tensorhub/transport/cma_check.hpp"

namespace tensorhub::transport {

CmaCheck check_cma() {
  CmaCheck c;
  const auto scope = cma::yama_ptrace_scope();
  const std::string yama = scope ? "Yama ptrace_scope " + std::to_string(*scope) : "no Yama";
  const int pidfd = static_cast<int>(syscall(SYS_pidfd_open, getpid(), 0));
  if (pidfd < 0) {
    c.detail = std::string("pidfd_open failed (") + std::strerror(errno) + "; Linux 5.3 or newer is needed); " + yama;
    return c;
  }
  close(pidfd);
  try {
    cma::allow_any_reader();
  } catch (const Error& e) {
    c.detail = std::string(e.what()) + "; " + yama;
    return c;
  }
  // A child (not an ancestor: what Yama scope 1 restricts) reads a word of this process.
  volatile std::uint64_t word = 0x7e45'0c0d'e5ca'fe01;
  const pid_t parent = getpid();
  const pid_t child = fork();
  if (child < 0) {
    c.detail = std::string("fork failed: ") + std::strerror(errno);
    return c;
  }
  if (child == 0) {
    std::uint64_t got = 0;
    iovec local{&got, sizeof got};
    iovec remote{const_cast<std::uint64_t*>(&word), sizeof got};
    const ssize_t n = process_vm_readv(parent, &local, 1, &remote, 1, 0);
    _exit(n == sizeof got && got == word ? 0 : (n < 0 ? (errno == EPERM ? 2 : 3) : 4));
  }
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  const int rc = WIFEXITED(status) ? WEXITSTATUS(status) : 5;
  c.ok = rc == 0;
  if (c.ok) {
    c.detail = "process_vm_readv from another process works; " + yama;
  } else if (rc == 2) {
    c.detail = cma::permission_hint();
  } else {
    c.detail = "process_vm_readv from a child process failed (code " + std::to_string(rc) + "); " + yama;
  }
  return c;
}

}  // namespace tensorhub::transport
