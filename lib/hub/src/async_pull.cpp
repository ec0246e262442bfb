// PullHandle (tensorhub/hub.hpp); its State is async_pull.hpp.
#include "async_pull.hpp"

#include <utility>

#include "tensorhub/core/log.hpp"
#include "tensorhub/transfer/pull_engine.hpp"

namespace tensorhub {

// --- PullHandle ---

namespace {

PullHandle::State& checked(const std::shared_ptr<PullHandle::State>& s, const char* method) {
  if (!s) throw UserError(std::string("PullHandle::") + method + " on an empty handle");
  return *s;
}

}  // namespace

PullHandle::PullHandle(std::shared_ptr<State> state) : state_(std::move(state)) {}

PullHandle::PullHandle(PullHandle&&) noexcept = default;

PullHandle& PullHandle::operator=(PullHandle&& other) noexcept {
  if (this != &other) {
    PullHandle old(std::move(*this));  // its destructor cancels a pull still running
    state_ = std::move(other.state_);
  }
  return *this;
}

PullHandle::~PullHandle() {
  if (!state_ || state_->ready()) return;
  try {
    cancel();
  } catch (const std::exception& e) {
    Logger("hub").error(std::string("pull cancelled by its handle's destructor: ") + e.what());
  }
}

bool PullHandle::ready() const { return checked(state_, "ready").ready(); }

bool PullHandle::wait(std::chrono::milliseconds timeout) const { return checked(state_, "wait").wait(timeout); }

PullProgress PullHandle::progress() const {
  const auto& s = checked(state_, "progress");
  return PullProgress{s.done.load(), s.total.load()};
}

PullResult PullHandle::result() const { return checked(state_, "result").result(); }

void PullHandle::cancel() {
  auto& s = checked(state_, "cancel");
  s.cancel = true;
  const auto error = s.error();  // waits for the worker's last word
  if (!error) return;
  try {
    std::rethrow_exception(error);
  } catch (const transfer::ReadsAbandoned&) {
    throw;  // the buffers may still be written: the caller must know
  } catch (...) {
    // cancelled, or failed otherwise: result() reports it
  }
}

}  // namespace tensorhub
