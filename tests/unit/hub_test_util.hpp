// Shared fixtures of the MPI-free hub tests: several HubCores in one process, each with its own
// LocalTransport (reads are memcpy from another hub's memory), around one in-process
// coord::Coordinator, reached through a CountingClient that counts what each hub sends.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "hub_core.hpp"
#include "local/local_transport.hpp"
#include "tensorhub/coord/coordinator.hpp"

namespace tensorhub::test {

constexpr std::uint64_t kChunk = 4096;

// Where a call waits while a test holds it (open unless close()d); counts who waits.
class Gate {
 public:
  void close() {
    std::lock_guard lock(mu_);
    open_ = false;
  }
  void open() {
    {
      std::lock_guard lock(mu_);
      open_ = true;
    }
    cv_.notify_all();
  }
  void pass() {
    std::unique_lock lock(mu_);
    ++waiting_;
    cv_.notify_all();
    cv_.wait(lock, [&] { return open_; });
    --waiting_;
  }
  // Waits until `n` callers wait at the closed gate.
  void await_waiting(int n) {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return waiting_ >= n; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = true;
  int waiting_ = 0;
};

// Forwards every call to `inner`; counts all but heartbeats (the heartbeat thread's). publish()
// first passes `publish_gate`.
class CountingClient final : public coord::Client {
 public:
  explicit CountingClient(coord::Client& inner) : inner_(inner) {}
  std::uint64_t calls() const { return calls_.load(); }
  Gate publish_gate;

  coord::WorkerId register_worker(const coord::WorkerInfo& i) override { return (++calls_, inner_.register_worker(i)); }
  void deregister_worker(coord::WorkerId w) override { ++calls_, inner_.deregister_worker(w); }
  coord::HeartbeatReply heartbeat(coord::WorkerId w) override { return inner_.heartbeat(w); }
  coord::PublishReply publish(const coord::PublishRequest& r) override {
    publish_gate.pass();
    return (++calls_, inner_.publish(r));
  }
  std::uint32_t unpublish(coord::WorkerId w, const std::string& m, std::uint64_t v) override {
    return (++calls_, inner_.unpublish(w, m, v));
  }
  std::uint32_t wait_drained(coord::WorkerId w, const std::string& m, std::uint64_t v,
                             std::chrono::milliseconds t) override {
    return (++calls_, inner_.wait_drained(w, m, v, t));
  }
  void retain(const std::string& m, std::uint64_t v) override { ++calls_, inner_.retain(m, v); }
  void release(const std::string& m, std::uint64_t v) override { ++calls_, inner_.release(m, v); }
  void attach_snapshot(const std::string& p, const Manifest& m) override { ++calls_, inner_.attach_snapshot(p, m); }
  coord::OffloadLease begin_offload(coord::WorkerId w, const std::string& m, std::uint64_t v) override {
    return (++calls_, inner_.begin_offload(w, m, v));
  }
  void end_offload(coord::WorkerId w, const std::string& m, std::uint64_t v) override {
    ++calls_, inner_.end_offload(w, m, v);
  }
  std::optional<std::uint64_t> latest(const std::string& m) override { return (++calls_, inner_.latest(m)); }
  std::optional<std::uint64_t> wait_for(const std::string& m, std::optional<std::uint64_t> n,
                                        std::chrono::milliseconds t) override {
    return (++calls_, inner_.wait_for(m, n, t));
  }
  coord::ResolveReply resolve(const coord::ResolveRequest& r) override { return (++calls_, inner_.resolve(r)); }
  void offer_relay(const coord::RelayOffer& o) override { ++calls_, inner_.offer_relay(o); }
  coord::AcquireReply acquire(const coord::AcquireRequest& r) override { return (++calls_, inner_.acquire(r)); }
  coord::PlanReply plan(const coord::PlanRequest& r) override { return (++calls_, inner_.plan(r)); }
  void complete(const coord::CompleteRequest& r) override { ++calls_, inner_.complete(r); }
  void finish(const coord::FinishRequest& r) override { ++calls_, inner_.finish(r); }
  std::vector<coord::ModelStatus> status() override { return (++calls_, inner_.status()); }
  std::vector<coord::WorkerStatus> workers() override { return (++calls_, inner_.workers()); }

 private:
  coord::Client& inner_;
  std::atomic<std::uint64_t> calls_{0};
};

inline std::uint64_t word(std::uint64_t version, std::uint64_t tensor, std::uint64_t i) {
  return (version << 40) ^ (tensor << 32) ^ (i * 2654435761u);
}

// `count` f32 tensors "<prefix><t>" of `bytes` each (multiple of 8) in host memory.
struct Buffers {
  std::vector<std::vector<std::uint64_t>> data;
  std::vector<Tensor> tensors;

  Buffers(std::size_t count, std::uint64_t bytes, const std::string& prefix = "w") : data(count) {
    for (std::size_t t = 0; t < count; ++t) {
      data[t].assign(bytes / 8, 0);
      tensors.push_back(
          host_tensor(prefix + std::to_string(t), DType::kF32, {static_cast<std::int64_t>(bytes / 4)}, data[t].data()));
    }
  }
  void fill(std::uint64_t version) {
    for (std::size_t t = 0; t < data.size(); ++t) {
      for (std::size_t i = 0; i < data[t].size(); ++i) data[t][i] = word(version, t, i);
    }
  }
  // Words of tensor t (all tensors if nullopt) that do not hold `version`'s pattern for
  // tensor index `as` (default: t).
  std::size_t mismatches(std::uint64_t version) const {
    std::size_t bad = 0;
    for (std::size_t t = 0; t < data.size(); ++t) bad += mismatches_of(t, version, t);
    return bad;
  }
  std::size_t mismatches_of(std::size_t t, std::uint64_t version, std::size_t as) const {
    std::size_t bad = 0;
    for (std::size_t i = 0; i < data[t].size(); ++i) bad += data[t][i] != word(version, as, i);
    return bad;
  }
  std::span<const Tensor> only(std::size_t t) const { return {&tensors[t], 1}; }
};

inline HubOptions small_chunks() {
  HubOptions o;
  o.transport = "local";
  o.chunk_bytes = kChunk;
  o.rpc_deadline = std::chrono::milliseconds(5000);
  o.pull_deadline = std::chrono::milliseconds(10000);
  return o;
}

// One coordinator and the hubs around it; hubs still open are closed (in reverse) at the end.
class LocalHubs : public ::testing::Test {
 protected:
  explicit LocalHubs(coord::CoordinatorConfig cfg = {}) : coordinator_(cfg), client_(coordinator_) {}
  ~LocalHubs() override {
    for (auto it = hubs_.rbegin(); it != hubs_.rend(); ++it) {
      if (!(*it)->closed()) (*it)->close();
    }
  }

  HubCore& add_hub(HubOptions o = small_chunks()) {
    const auto rank = static_cast<int>(hubs_.size());
    return add_hub_over(std::make_unique<transport::LocalTransport>("hub" + std::to_string(rank)), std::move(o));
  }
  // A hub over a transport of the test's choosing (a multi transport of several paths).
  HubCore& add_hub_over(std::unique_ptr<transport::Transport> t, HubOptions o = small_chunks()) {
    const auto rank = static_cast<int>(hubs_.size());
    hubs_.push_back(std::make_unique<HubCore>(client_, std::move(t), rank, std::move(o)));
    return *hubs_.back();
  }

  std::optional<coord::VersionStatus> version_status(const std::string& model, std::uint64_t v) {
    for (const auto& m : coordinator_.status()) {
      if (m.model != model) continue;
      for (const auto& vs : m.versions) {
        if (vs.version == v) return vs;
      }
    }
    return std::nullopt;
  }
  // The holder entry of `worker` for (model, v), if any.
  std::optional<coord::HolderStatus> holder(const std::string& model, std::uint64_t v, coord::WorkerId worker) {
    const auto vs = version_status(model, v);
    if (!vs) return std::nullopt;
    for (const auto& h : vs->holder_list) {
      if (h.worker == worker) return h;
    }
    return std::nullopt;
  }

  coord::Coordinator coordinator_;
  CountingClient client_;
  std::vector<std::unique_ptr<HubCore>> hubs_;
};

// Single-reader relay chains need K = 1 (a later reader must use the earlier one).
class LocalHubsK1 : public LocalHubs {
 protected:
  LocalHubsK1() : LocalHubs(k1()) {}
  static coord::CoordinatorConfig k1() {
    coord::CoordinatorConfig c;
    c.max_readers_per_source = 1;
    return c;
  }
};

}  // namespace tensorhub::test
