#include "progress_bytes.hpp"

#include <atomic>
#include <cstring>

#include "tensorhub/core/error.hpp"

namespace tensorhub {

ProgressBytes::ProgressBytes(transport::Transport& transport, std::uint32_t chunks)
    : transport_(transport), size_(chunks) {
  require(chunks > 0, "progress bytes for a version without chunks");
  try {
    data_ = static_cast<unsigned char*>(transport_.allocate(chunks));
    pooled_ = true;
  } catch (const UserError&) {
    heap_ = std::make_unique<unsigned char[]>(chunks);  // no registered pool: any memory will do
    data_ = heap_.get();
  }
  std::memset(data_, 0, chunks);
  try {
    const transport::MemoryRange range{data_, chunks, MemoryKind::kHost};
    exposure_ = transport_.expose({&range, 1});
    require(exposure_->descriptors().size() == 1, "expose of one range gave other than one descriptor");
  } catch (...) {
    exposure_.reset();
    if (pooled_) transport_.deallocate(data_);
    throw;
  }
}

ProgressBytes::~ProgressBytes() {
  exposure_.reset();  // no longer readable before the memory goes
  if (!pooled_) return;
  try {
    transport_.deallocate(data_);
  } catch (...) {
    // the pool is being torn down: nothing left to return the bytes to
  }
}

void ProgressBytes::mark(std::span<const std::uint32_t> chunks) {
  for (const auto c : chunks) {
    require(c < size_, "progress byte of a chunk out of range");
    std::atomic_ref<unsigned char>(data_[c]).store(1, std::memory_order_release);
  }
}

std::shared_ptr<ProgressBytes> make_progress_bytes(transport::Transport& transport, std::uint32_t chunks,
                                                   const Logger& log) {
  if (chunks == 0) return nullptr;
  try {
    return std::make_shared<ProgressBytes>(transport, chunks);
  } catch (const Error& e) {
    log.debug(std::string("no progress bytes for this relay (planned readers use only what it reports held): ") +
              e.what());
    return nullptr;
  }
}

}  // namespace tensorhub
