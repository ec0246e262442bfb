#include "verifier.hpp"

#include <utility>

namespace tensorhub::transfer {

Verifier::Verifier(unsigned threads) {
  workers_.reserve(threads);
  for (unsigned i = 0; i < threads; ++i) workers_.emplace_back([this] { work(); });
}

Verifier::~Verifier() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
    queue_.clear();
  }
  cv_.notify_all();
  for (auto& t : workers_) t.join();
}

void Verifier::submit(std::uint32_t chunk, const unsigned char* data, std::uint64_t length, ChecksumAlgorithm algorithm,
                      std::uint64_t expected, std::function<void()> then) {
  {
    std::lock_guard lock(mu_);
    queue_.push_back(Task{chunk, data, length, algorithm, expected, std::move(then), {}});
    ++pending_;
  }
  cv_.notify_one();
}

void Verifier::submit(std::uint32_t chunk, const unsigned char* base, std::vector<transport::Piece> pieces,
                      ChecksumAlgorithm algorithm, std::uint64_t expected) {
  {
    std::lock_guard lock(mu_);
    queue_.push_back(Task{chunk, base, 0, algorithm, expected, {}, std::move(pieces)});
    ++pending_;
  }
  cv_.notify_one();
}

std::uint64_t scattered_checksum(ChecksumAlgorithm algorithm, const unsigned char* base,
                                 std::span<const transport::Piece> pieces) {
  ChecksumStream sum(algorithm);
  for (const auto& p : pieces) sum.update(base + p.offset, p.length);
  return sum.digest();
}

void Verifier::collect(std::vector<Result>& out) {
  std::lock_guard lock(mu_);
  out.insert(out.end(), done_.begin(), done_.end());
  pending_ -= done_.size();
  done_.clear();
}

std::size_t Verifier::pending() const {
  std::lock_guard lock(mu_);
  return pending_;
}

void Verifier::wait_idle() noexcept {
  std::unique_lock lock(mu_);
  queue_.clear();
  idle_cv_.wait(lock, [&] { return running_ == 0; });
  pending_ = 0;
  done_.clear();
}

void Verifier::work() {
  std::unique_lock lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    if (stop_) return;
    Task t = std::move(queue_.front());
    queue_.pop_front();
    ++running_;
    lock.unlock();
    const auto start = std::chrono::steady_clock::now();
    bool good = false;
    try {
      good = (t.pieces.empty() ? checksum64(t.algorithm, t.data, t.length)
                               : scattered_checksum(t.algorithm, t.data, t.pieces)) == t.expected;
    } catch (...) {
      good = false;
    }
    if (good && t.then) {
      try {
        t.then();
      } catch (...) {
        good = false;
      }
    }
    const auto end = std::chrono::steady_clock::now();
    lock.lock();
    --running_;
    done_.push_back(Result{t.chunk, good, start, end});
    idle_cv_.notify_all();
  }
}

}  // namespace tensorhub::transfer
