// PublishHandle (tensorhub/hub.hpp); its State is async_publish.hpp.
#include "async_publish.hpp"

#include <utility>

namespace tensorhub {

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
