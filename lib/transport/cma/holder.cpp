#include "holder.hpp"

#include <poll.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "identity.hpp"
#include "tensorhub/core/error.hpp"

namespace tensorhub::transport::cma {
namespace {

int pidfd_open(pid_t pid) { return static_cast<int>(syscall(SYS_pidfd_open, pid, 0)); }

}  // namespace

std::string permission_hint() {
  std::string s =
      "the kernel refused process_vm_readv (EPERM): the reader needs ptrace read access to the holder (same "
      "user and a dumpable holder, or CAP_SYS_PTRACE)";
  if (const auto scope = yama_ptrace_scope()) {
    s += "; Yama kernel.yama.ptrace_scope is " + std::to_string(*scope);
    if (*scope >= 2) {
      s += " (2 needs CAP_SYS_PTRACE, 3 forbids it): set `sysctl kernel.yama.ptrace_scope=1` (holders allow any "
           "reader with PR_SET_PTRACER_ANY) or use another transport (--transport ucx)";
    }
  }
  return s;
}

Holder::Holder(const EndpointText& endpoint) : endpoint_(endpoint), label_(cma::label(endpoint)) {
  pidfd_ = pidfd_open(endpoint_.pid);
  if (pidfd_ < 0) {
    if (errno == ESRCH) {
      mark_dead("holder " + label_ + " has exited (no such process)");
      return;
    }
    if (errno == ENOSYS) throw TransportError("cma: this kernel has no pidfd_open (Linux 5.3 or newer is needed)");
    throw TransportError("cma: pidfd_open(" + std::to_string(endpoint_.pid) + "): " + std::strerror(errno));
  }
  // The pidfd refers to whatever process has this pid now: it must be the holder's incarnation.
  const auto start = process_start_time(endpoint_.pid);
  if (!start || *start != endpoint_.start_time) {
    mark_dead("holder " + label_ + " has exited (its pid now names another process)");
  }
}

Holder::~Holder() {
  if (pidfd_ >= 0) close(pidfd_);
}

bool Holder::alive() {
  if (dead_.load(std::memory_order_acquire)) return false;
  pollfd p{pidfd_, POLLIN, 0};
  const int r = ::poll(&p, 1, 0);
  if (r == 0) return true;
  if (r > 0) {
    mark_dead("holder " + label_ + " has exited (seen on its pidfd)");
  } else {
    mark_dead("holder " + label_ + ": poll on its pidfd failed: " + std::strerror(errno));
  }
  return false;
}

std::string Holder::why_dead() const {
  const std::lock_guard lock(mutex_);
  return why_dead_;
}

void Holder::mark_dead(const std::string& why) {
  const std::lock_guard lock(mutex_);
  if (dead_.load(std::memory_order_relaxed)) return;
  why_dead_ = why;
  dead_.store(true, std::memory_order_release);
}

std::string Holder::read(void* dst, std::uint64_t remote, std::uint64_t bytes, std::uint32_t slot,
                         std::uint64_t& generation) {
  const std::uint64_t word = endpoint_.table + std::uint64_t{slot} * 8;
  iovec to[2] = {{dst, bytes}, {&generation, 8}};
  iovec far[2] = {{reinterpret_cast<void*>(remote), bytes}, {reinterpret_cast<void*>(word), 8}};
  const bool none = bytes == 0;
  const ssize_t got =
      process_vm_readv(endpoint_.pid, none ? to + 1 : to, none ? 1 : 2, none ? far + 1 : far, none ? 1 : 2, 0);
  if (got == static_cast<ssize_t>(bytes + 8)) return {};
  const int err = got < 0 ? errno : EFAULT;  // a short count: the rest was not mapped
  if (!alive()) return why_dead();
  switch (err) {
    case ESRCH:
      mark_dead("holder " + label_ + " has exited (process_vm_readv: no such process)");
      return why_dead();
    case EPERM:
      mark_dead("holder " + label_ + ": " + permission_hint());
      return why_dead();
    case EFAULT:
      return "holder " + label_ + ": exposed memory is no longer mapped (withdrawn)";
    default:
      return "holder " + label_ + ": process_vm_readv: " + std::strerror(err);
  }
}

}  // namespace tensorhub::transport::cma
