#include "shared_transport.hpp"

#include <algorithm>
#include <utility>

namespace tensorhub {
namespace {

class Lane final : public transport::Transport {
 public:
  Lane(SharedTransport& shared, std::uint64_t id) : shared_(shared), id_(id) {}
  ~Lane() override { shared_.drop_lane(id_); }
  std::string_view name() const override { return shared_.name(); }
  const std::string& endpoint() const override { return shared_.endpoint(); }
  bool reaches(std::string_view endpoint) const override { return shared_.reaches(endpoint); }
  std::unique_ptr<transport::Exposure> expose(std::span<const transport::MemoryRange> ranges) override {
    return shared_.expose(ranges);
  }
  bool can_expose(const transport::MemoryRange& range) const override { return shared_.can_expose(range); }
  bool can_read_into(std::string_view endpoint, std::string_view descriptor, MemoryKind dst) const override {
    return shared_.can_read_into(endpoint, descriptor, dst);
  }
  bool can_scatter(std::string_view endpoint, std::string_view descriptor) const override {
    return shared_.can_scatter(endpoint, descriptor);
  }
  void post(const transport::ReadOp& op) override { shared_.post_on(id_, op); }
  void poll(std::vector<transport::Completion>& out) override { shared_.poll_on(id_, out); }
  std::size_t in_flight() const override { return shared_.in_flight_on(id_); }

 private:
  SharedTransport& shared_;
  std::uint64_t id_;
};

}  // namespace

SharedTransport::SharedTransport(std::unique_ptr<transport::Transport> inner) : inner_(std::move(inner)) {}

SharedTransport::~SharedTransport() = default;

std::unique_ptr<transport::Transport> SharedTransport::lane() {
  std::lock_guard lock(mu_);
  return std::make_unique<Lane>(*this, next_lane_++);
}

bool SharedTransport::reaches(std::string_view endpoint) const {
  std::lock_guard lock(mu_);
  return inner_->reaches(endpoint);
}

std::unique_ptr<transport::Exposure> SharedTransport::expose(std::span<const transport::MemoryRange> ranges) {
  std::lock_guard lock(mu_);
  return inner_->expose(ranges);
}

bool SharedTransport::can_expose(const transport::MemoryRange& range) const {
  std::lock_guard lock(mu_);
  return inner_->can_expose(range);
}

bool SharedTransport::can_read_into(std::string_view endpoint, std::string_view descriptor, MemoryKind dst) const {
  std::lock_guard lock(mu_);
  return inner_->can_read_into(endpoint, descriptor, dst);
}

bool SharedTransport::can_scatter(std::string_view endpoint, std::string_view descriptor) const {
  std::lock_guard lock(mu_);
  return inner_->can_scatter(endpoint, descriptor);
}

void SharedTransport::post_on(std::uint64_t lane, const transport::ReadOp& op) {
  std::lock_guard lock(mu_);
  transport::ReadOp mine = op;
  mine.tag = next_tag_++;
  owners_.emplace(mine.tag, Owner{lane, op.tag});
  try {
    inner_->post(mine);
  } catch (...) {
    owners_.erase(mine.tag);
    throw;
  }
}

void SharedTransport::collect_locked() {
  scratch_.clear();
  inner_->poll(scratch_);
  for (auto& c : scratch_) {
    const auto it = owners_.find(c.tag);
    if (it == owners_.end()) continue;  // its lane is gone
    c.tag = it->second.tag;
    queues_[it->second.lane].push_back(std::move(c));
    owners_.erase(it);
  }
}

void SharedTransport::poll_on(std::uint64_t lane, std::vector<transport::Completion>& out) {
  std::lock_guard lock(mu_);
  collect_locked();
  const auto it = queues_.find(lane);
  if (it == queues_.end()) return;
  for (auto& c : it->second) out.push_back(std::move(c));
  queues_.erase(it);
}

std::size_t SharedTransport::in_flight_on(std::uint64_t lane) const {
  std::lock_guard lock(mu_);
  const auto q = queues_.find(lane);
  std::size_t n = q == queues_.end() ? 0 : q->second.size();
  n += static_cast<std::size_t>(
      std::count_if(owners_.begin(), owners_.end(), [lane](const auto& kv) { return kv.second.lane == lane; }));
  return n;
}

void SharedTransport::drop_lane(std::uint64_t lane) {
  std::lock_guard lock(mu_);
  queues_.erase(lane);
  for (auto it = owners_.begin(); it != owners_.end();) {
    it = it->second.lane == lane ? owners_.erase(it) : std::next(it);
  }
}

void* SharedTransport::allocate(std::uint64_t bytes) {
  std::lock_guard lock(mu_);
  return inner_->allocate(bytes);
}

void SharedTransport::deallocate(void* p) {
  std::lock_guard lock(mu_);
  inner_->deallocate(p);
}

void SharedTransport::close() {
  std::lock_guard lock(mu_);
  inner_->close();
}

bool SharedTransport::job_barrier() {
  std::lock_guard lock(mu_);
  return inner_->job_barrier();
}

}  // namespace tensorhub
