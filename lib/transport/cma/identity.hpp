// Who a cma holder is, and whether a reader can reach it: the same kernel (boot id), the same
// pid namespace (a pid means the same process to both), and the same process incarnation (its
// start time, so a recycled pid is never read).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>

namespace tensorhub::transport::cma {

struct HostIdentity {
  std::string hostname;      // for messages only; ':' and whitespace replaced by '_'
  std::string boot_id;       // /proc/sys/kernel/random/boot_id: 36 characters [0-9a-f-]
  std::uint64_t pid_ns = 0;  // inode of /proc/self/ns/pid
};

// This process's host identity. Throws TransportError when /proc does not say (no procfs).
HostIdentity local_host();

// Start time of process `pid` (field 22 of /proc/<pid>/stat, clock ticks since boot); nullopt
// when there is no such process (or /proc does not show it).
std::optional<std::uint64_t> process_start_time(pid_t pid);

// Yama's ptrace_scope (0..3), nullopt without Yama.
std::optional<int> yama_ptrace_scope();

// Allows any process of this user to read this process's memory (prctl PR_SET_PTRACER_ANY),
// which Yama ptrace_scope 1 needs for readers that are not its ancestors. A no-op without Yama;
// throws TransportError when the kernel refuses.
void allow_any_reader();

}  // namespace tensorhub::transport::cma
