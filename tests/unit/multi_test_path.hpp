// A fake data path for the multi transport's tests: memcpy reads like `local`, but with a name
// of its own, an endpoint "<name>:<group>:<id>" that reaches only endpoints of its group (as
// mpi_rma reaches only its own job), optionally exposing only memory inside a "pool", and
// counters of what it was asked to do.
#pragma once

#include <cstring>
#include <deque>
#include <memory>
#include <string>

#include "tensorhub/core/error.hpp"
#include "tensorhub/transport/descriptor.hpp"
#include "tensorhub/transport/transport.hpp"

namespace tensorhub::test {

struct PathCounters {
  int exposes = 0;  // expose() calls
  int live_exposures = 0;
  int posts = 0;
};

class FakePath final : public transport::Transport {
 public:
  FakePath(std::string name, const std::string& group, const std::string& id, std::shared_ptr<PathCounters> counters,
           const unsigned char* pool = nullptr, std::uint64_t pool_bytes = 0)
      : name_(std::move(name)),
        prefix_(name_ + ":" + group + ":"),
        endpoint_(prefix_ + id),
        counters_(std::move(counters)),
        pool_(pool),
        pool_bytes_(pool_bytes) {}

  std::string_view name() const override { return name_; }
  const std::string& endpoint() const override { return endpoint_; }
  bool reaches(std::string_view e) const override { return e.starts_with(prefix_); }
  bool can_expose(const transport::MemoryRange& r) const override {
    if (pool_ == nullptr) return true;
    const auto* p = static_cast<const unsigned char*>(r.base);
    return p >= pool_ && p + r.bytes <= pool_ + pool_bytes_;
  }
  // The "job" path scatters reads (as mpi_rma does), any other does not (as ucx).
  bool can_scatter(std::string_view e, std::string_view) const override { return name_ == "job" && reaches(e); }
  std::unique_ptr<transport::Exposure> expose(std::span<const transport::MemoryRange> ranges) override {
    ++counters_->exposes;
    std::vector<std::string> d;
    for (const auto& r : ranges) {
      if (!can_expose(r)) throw UserError(name_ + ": not in the pool");
      d.push_back(transport::encode_region(r.base, r.bytes));
    }
    return std::make_unique<Exp>(std::move(d), counters_);
  }
  void post(const transport::ReadOp& op) override {
    if (!reaches(op.endpoint)) throw TransportError(name_ + " cannot reach '" + op.endpoint + "'");
    const auto r = transport::decode_region(op.descriptor);
    ++counters_->posts;
    std::memcpy(op.dst, reinterpret_cast<const unsigned char*>(r.address) + op.offset, op.length);
    done_.push_back(transport::Completion{op.tag, true, {}});
  }
  void poll(std::vector<transport::Completion>& out) override {
    for (auto& c : done_) out.push_back(c);
    done_.clear();
  }
  std::size_t in_flight() const override { return done_.size(); }

 private:
  class Exp final : public transport::Exposure {
   public:
    Exp(std::vector<std::string> d, std::shared_ptr<PathCounters> c) : d_(std::move(d)), c_(std::move(c)) {
      ++c_->live_exposures;
    }
    ~Exp() override { --c_->live_exposures; }
    const std::vector<std::string>& descriptors() const override { return d_; }

   private:
    std::vector<std::string> d_;
    std::shared_ptr<PathCounters> c_;
  };

  std::string name_;
  std::string prefix_;
  std::string endpoint_;
  std::shared_ptr<PathCounters> counters_;
  const unsigned char* pool_;
  std::uint64_t pool_bytes_;
  std::deque<transport::Completion> done_;
};

}  // namespace tensorhub::test
