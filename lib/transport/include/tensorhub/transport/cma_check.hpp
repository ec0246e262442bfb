// Can this machine use the `cma` transport (same-host process_vm_readv, lib/transport/cma)?
// For `tensorhub probe`: checks pidfd_open and a real cross-process read (a forked child reads
// this process's memory after it allowed readers the way a holder does), and reports Yama's
// ptrace_scope. Never throws.
#pragma once

#include <string>

namespace tensorhub::transport {

struct CmaCheck {
  bool ok = false;
  std::string detail;  // what was found; on failure, why and what to set
};

CmaCheck check_cma();

}  // namespace tensorhub::transport
