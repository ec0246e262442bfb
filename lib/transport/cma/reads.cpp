#include "reads.hpp"

#include <algorithm>
#include <utility>

#include "stream_copy.hpp"
#include "tensorhub/core/error.hpp"

namespace tensorhub::transport::cma {
namespace {

constexpr std::size_t kMaxHolders = 4096;  // cached pidfds; dead or idle ones are dropped beyond

}  // namespace

Reads::Reads(std::uint32_t threads, const Blocks& blocks, std::chrono::milliseconds deadline)
    : chunk_(blocks.chunk), digest_block_(blocks.digest), bounce_block_(blocks.bounce), deadline_(deadline) {
  require(threads > 0 && chunk_ > 0 && digest_block_ > 0 && bounce_block_ > 0,
          "cma: reads need a thread, a chunk size, a digest block and a bounce block");
  workers_.reserve(threads);
  try {
    for (std::uint32_t i = 0; i < threads; ++i) workers_.emplace_back([this] { work(); });
  } catch (...) {
    {
      const std::lock_guard lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    for (auto& t : workers_) t.join();
    throw;
  }
}

Reads::~Reads() {
  {
    const std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

std::shared_ptr<Holder> Reads::holder_for(const std::string& text, const EndpointText& endpoint) {
  {
    const std::lock_guard lock(mutex_);
    if (const auto it = holders_.find(text); it != holders_.end()) return it->second;
  }
  auto h = std::make_shared<Holder>(endpoint);  // pidfd_open outside the lock
  const std::lock_guard lock(mutex_);
  if (holders_.size() >= kMaxHolders) {
    std::erase_if(holders_, [](const auto& kv) { return kv.second.use_count() == 1; });
  }
  return holders_.try_emplace(text, std::move(h)).first->second;
}

void Reads::post(const std::string& endpoint_text, const EndpointText& endpoint, const DescriptorText& d,
                 const ReadOp& op) {
  Job job;
  job.holder = holder_for(endpoint_text, endpoint);
  job.remote = d.address + op.offset;
  job.dst = op.dst;
  job.length = op.length;
  job.pieces = op.pieces;
  job.digest = op.digest;
  job.slot = d.slot;
  job.generation = d.generation;
  job.tag = op.tag;
  job.deadline = Clock::now() + deadline_;
  {
    const std::lock_guard lock(mutex_);
    queue_.push_back(std::move(job));
  }
  wake_.notify_one();
}

void Reads::poll(std::vector<Completion>& out) {
  const std::lock_guard lock(mutex_);
  for (auto& c : done_) out.push_back(std::move(c));
  done_.clear();
}

std::size_t Reads::in_flight() const {
  const std::lock_guard lock(mutex_);
  return queue_.size() + running_ + done_.size();
}

void Reads::complete(std::uint64_t tag, std::string error, std::optional<std::uint64_t> digest) {
  const std::lock_guard lock(mutex_);
  --running_;
  const bool ok = error.empty();
  done_.push_back(Completion{tag, ok, std::move(error), ok ? digest : std::nullopt});
}

void Reads::work() {
  std::vector<unsigned char> bounce;  // this worker's, for scattered reads: bounce_block_ bytes
  for (;;) {
    Job job;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (stop_) return;
      job = std::move(queue_.front());
      queue_.pop_front();
      ++running_;
    }
    std::string error;
    std::optional<std::uint64_t> digest;
    try {
      std::optional<ChecksumStream> sum;
      if (job.digest) sum.emplace(*job.digest);
      error = copy(job, sum ? &*sum : nullptr, bounce);
      if (sum && error.empty()) digest = sum->digest();
    } catch (const std::exception& e) {  // e.g. bad_alloc building a message: still a completion
      error = std::string("cma: ") + e.what();
    }
    complete(job.tag, std::move(error), digest);
  }
}

std::string Reads::copy(const Job& job, ChecksumStream* sum, std::vector<unsigned char>& bounce) {
  Holder& h = *job.holder;
  const auto withdrawn = [&] {
    return "holder " + h.label() + ": the exposure was withdrawn (unpublished) before the read ended";
  };
  std::uint64_t generation = 0;
  // Is the exposure still there? Then no byte of withdrawn memory is read at all.
  if (!h.alive()) return h.why_dead();
  if (auto e = h.read(nullptr, 0, 0, job.slot, generation); !e.empty()) return e;
  if (generation != job.generation) return withdrawn();
  auto* dst = static_cast<unsigned char*>(job.dst);
  const bool scattered = !job.pieces.empty();
  if (scattered) bounce.resize(bounce_block_);
  PieceCursor cursor;
  const std::uint64_t part = scattered ? bounce_block_ : (sum != nullptr ? std::min(chunk_, digest_block_) : chunk_);
  for (std::uint64_t off = 0; off < job.length;) {
    {
      const std::lock_guard lock(mutex_);
      if (stop_) return "cma: transport closed";
    }
    if (Clock::now() > job.deadline) {
      return "holder " + h.label() + ": read deadline (" + std::to_string(deadline_.count()) + " ms) expired";
    }
    if (!h.alive()) return h.why_dead();
    const std::uint64_t n = std::min(part, job.length - off);
    unsigned char* into = scattered ? bounce.data() : dst + off;
    if (auto e = h.read(into, job.remote + off, n, job.slot, generation); !e.empty()) return e;
    if (generation != job.generation) return withdrawn();
    if (sum != nullptr) sum->update(into, n);
    if (scattered) scatter(job, bounce.data(), n, cursor);
    if (!h.alive()) return h.why_dead();
    off += n;
  }
  return {};
}

void Reads::scatter(const Job& job, const unsigned char* from, std::uint64_t n, PieceCursor& cursor) {
  auto* dst = static_cast<unsigned char*>(job.dst);
  for (std::uint64_t at = 0; at < n;) {
    const auto& p = job.pieces[cursor.piece];
    const std::uint64_t take = std::min(p.length - cursor.within, n - at);
    stream_copy(dst + p.offset + cursor.within, from + at, take);
    at += take;
    cursor.within += take;
    if (cursor.within == p.length) {
      ++cursor.piece;
      cursor.within = 0;
    }
  }
  stream_fence();  // the pieces are in memory before the completion says so
}

}  // namespace tensorhub::transport::cma
