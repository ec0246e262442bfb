// A reader's handle on one cma holder process: a pidfd (liveness, detected the moment the
// process exits: the pidfd polls readable) and the chunk reads themselves.
//
// process_vm_readv takes a pid, not a pidfd. A pid names the holder as long as the holder has
// not exited (a pid is recycled only after its process died and was reaped), so every read is
// bracketed by liveness checks: the holder's start time is checked once when the pidfd is
// opened (so the pidfd is the holder's), and the pidfd is polled before and after each chunk;
// bytes read while the holder might already have gone are never reported as read.
// Thread-safe: several reader threads use one Holder.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>

#include "codec.hpp"

namespace tensorhub::transport::cma {

class Holder {
 public:
  // Never throws for a gone holder (the Holder is then dead); throws TransportError when the
  // kernel has no pidfd_open (Linux < 5.3) or refuses it for another reason.
  explicit Holder(const EndpointText& endpoint);
  ~Holder();
  Holder(const Holder&) = delete;
  Holder& operator=(const Holder&) = delete;

  const std::string& label() const { return label_; }
  // False once the process exited (checked now) or a read found it gone; sets why_dead().
  bool alive();
  std::string why_dead() const;
  void mark_dead(const std::string& why);

  // Reads `bytes` at `remote` into `dst`, then the generation word of `slot` (one syscall, in
  // that order). Returns "" on success and the generation in `generation`, or what went wrong.
  // bytes may be 0 (only the generation is read).
  std::string read(void* dst, std::uint64_t remote, std::uint64_t bytes, std::uint32_t slot, std::uint64_t& generation);

 private:
  EndpointText endpoint_;
  std::string label_;
  int pidfd_ = -1;
  std::atomic<bool> dead_{false};
  mutable std::mutex mutex_;
  std::string why_dead_;
};

// The message for EPERM from process_vm_readv: what the kernel checks and what to set.
std::string permission_hint();

}  // namespace tensorhub::transport::cma
