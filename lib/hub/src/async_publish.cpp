// PublishHandle (tensorhub/hub.hpp) and its State (async_publish.hpp).
#include "async_publish.hpp"

#include <utility>

namespace tensorhub {

void PublishHandle::State::hashed() {
  {
    std::lock_guard lock(mu_);
    hashed_ = true;
  }
  cv_.notify_all();
}

void PublishHandle::State::wait_hashed() const {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return hashed_ || finished_; });
}

void PublishHandle::State::finish(std::optional<PublishResult> result, std::exception_ptr error) {
  {
    std::lock_guard lock(mu_);
    result_ = std::move(result);
    error_ = std::move(error);
    hashed_ = true;
    finished_ = true;
  }
  cv_.notify_all();
}

bool PublishHandle::State::ready() const {
  std::lock_guard lock(mu_);
  return finished_;
}

bool PublishHandle::State::wait(std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mu_);
  return cv_.wait_for(lock, timeout, [&] { return finished_; });
}

PublishResult PublishHandle::State::result() const {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return finished_; });
  if (error_) std::rethrow_exception(error_);
  return *result_;
}

std::exception_ptr PublishHandle::State::error() const {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return finished_; });
  return error_;
}

// --- PublishHandle ---

namespace {

PublishHandle::State& checked(const std::shared_ptr<PublishHandle::State>& s, const char* method) {
  if (!s) throw UserError(std::string("PublishHandle::") + method + " on an empty handle");
  return *s;
}

}  // namespace

PublishHandle::PublishHandle(std::shared_ptr<State> state) : state_(std::move(state)) {}
PublishHandle::PublishHandle(PublishHandle&&) noexcept = default;
PublishHandle& PublishHandle::operator=(PublishHandle&&) noexcept = default;
PublishHandle::~PublishHandle() = default;  // the publish goes on (its worker logs an error)

bool PublishHandle::ready() const { return checked(state_, "ready").ready(); }

bool PublishHandle::wait(std::chrono::milliseconds timeout) const { return checked(state_, "wait").wait(timeout); }

PublishResult PublishHandle::result() const { return checked(state_, "result").result(); }

void PublishHandle::cancel() {
  auto& s = checked(state_, "cancel");
  s.cancel = true;
  static_cast<void>(s.error());  // waits for the worker's last word; result() reports it
}

}  // namespace tensorhub
