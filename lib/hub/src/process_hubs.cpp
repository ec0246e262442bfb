#include "process_hubs.hpp"

#include <utility>

namespace tensorhub {

ProcessHubs::Registration& ProcessHubs::Registration::operator=(Registration&& o) noexcept {
  if (this != &o) {
    if (hubs_ != nullptr) hubs_->remove(id_);
    hubs_ = std::exchange(o.hubs_, nullptr);
    id_ = o.id_;
  }
  return *this;
}

ProcessHubs::Registration::~Registration() {
  if (hubs_ != nullptr) hubs_->remove(id_);
}

ProcessHubs& ProcessHubs::of_this_process() {
  static ProcessHubs hubs;  // what is alive in this address space: per process by nature
  return hubs;
}

ProcessHubs::Registration ProcessHubs::add(Entry e) {
  std::lock_guard lock(mu_);
  const auto id = next_++;
  hubs_.emplace(id, std::move(e));
  return Registration(this, id);
}

std::vector<ProcessHubs::Entry> ProcessHubs::on(const std::string& coordinator) const {
  std::lock_guard lock(mu_);
  std::vector<Entry> out;
  for (const auto& [id, e] : hubs_) {
    if (e.coordinator == coordinator) out.push_back(e);
  }
  return out;
}

void ProcessHubs::remove(std::uint64_t id) {
  std::lock_guard lock(mu_);
  hubs_.erase(id);
}

}  // namespace tensorhub
