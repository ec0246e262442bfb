// A relay's progress bytes (private header): one byte per chunk of the version it relays, zero
// until the chunk engine verified that chunk (then 1, release store), exposed on the transport
// so that readers planned behind this rank read them one-sidedly (RelayOffer::progress,
// architecture.md section 3). On a backend with a registered pool (mpi_rma) the bytes come from
// Transport::allocate(), elsewhere from the heap. Owned by the relay Reference (shared by the
// references of one version): they stop being exposed, and are freed, with it.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "tensorhub/core/log.hpp"
#include "tensorhub/transport/transport.hpp"

namespace tensorhub {

class ProgressBytes {
 public:
  // Zeroed bytes for `chunks` chunks, exposed on `transport` (which must outlive this object).
  // Throws what allocate/expose throw.
  ProgressBytes(transport::Transport& transport, std::uint32_t chunks);
  ~ProgressBytes();
  ProgressBytes(const ProgressBytes&) = delete;
  ProgressBytes& operator=(const ProgressBytes&) = delete;

  unsigned char* data() const { return data_; }
  std::uint32_t size() const { return size_; }
  const std::string& descriptor() const { return exposure_->descriptors().front(); }
  // Sets the bytes of `chunks` (held, e.g. read from the version's snapshot file).
  void mark(std::span<const std::uint32_t> chunks);

 private:
  transport::Transport& transport_;
  unsigned char* data_ = nullptr;
  std::uint32_t size_ = 0;
  bool pooled_ = false;  // from transport_.allocate()
  std::unique_ptr<unsigned char[]> heap_;
  std::unique_ptr<transport::Exposure> exposure_;
};

// ProgressBytes for `chunks` chunks, or null (logged at debug) when this transport cannot expose
// them: the relay then offers no progress bytes, and plans use it only for what it reports held.
std::shared_ptr<ProgressBytes> make_progress_bytes(transport::Transport& transport, std::uint32_t chunks,
                                                   const Logger& log);

}  // namespace tensorhub
