#include "reads.hpp"

#include <algorithm>
#include <utility>

#include "tensorhub/core/error.hpp"

namespace tensorhub::transport::cma {
namespace {

constexpr std::size_t kMaxHolders = 4096;  // cached pidfds; dead or idle ones are dropped beyond

}  // namespace

Reads::Reads(std::uint32_t threads, std::uint64_t chunk, std::uint64_t digest_block, std::chrono::milliseconds deadline)
    : chunk_(chunk), digest_block_(digest_block), deadline_(deadline) {
  require(threads > 0 && chunk > 0 && digest_block > 0, "cma: reads need a thread, a chunk size and a digest block");
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
      error = copy(job, sum ? &*sum : nullptr);
      if (sum && error.empty()) digest = sum->digest();
    } catch (const std::exception& e) {  // e.g. bad_alloc building a message: still a completion
      error = std::string("cma: ") + e.what();
    }
    complete(job.tag, std::move(error), digest);
  }
}

std::string Reads::copy(const Job& job, ChecksumStream* sum) {
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
  std::size_t piece = 0;  // scattered: the cursor
  std::uint64_t within = 0;
  std::vector<iovec> local;
  const std::uint64_t part = sum != nullptr ? std::min(chunk_, digest_block_) : chunk_;
  for (std::uint64_t off = 0; off < job.length;) {
    {
      const std::lock_guard lock(mutex_);
      if (stop_) return "cma: transport closed";
    }
    if (Clock::now() > job.deadline) {
      return "holder " + h.label() + ": read deadline (" + std::to_string(deadline_.count()) + " ms) expired";
    }
    if (!h.alive()) return h.why_dead();
    std::uint64_t n = 0;
    if (job.pieces.empty()) {
      n = std::min(part, job.length - off);
      if (auto e = h.read(dst + off, job.remote + off, n, job.slot, generation); !e.empty()) return e;
      if (sum != nullptr) sum->update(dst + off, n);
    } else {
      n = gather(job, part, piece, within, local);
      if (auto e = h.read(local, job.remote + off, n, job.slot, generation); !e.empty()) return e;
      if (sum != nullptr) {
        for (const auto& v : local) sum->update(v.iov_base, v.iov_len);
      }
    }
    if (generation != job.generation) return withdrawn();
    if (!h.alive()) return h.why_dead();
    off += n;
  }
  return {};
}

std::uint64_t Reads::gather(const Job& job, std::uint64_t limit, std::size_t& piece, std::uint64_t& within,
                            std::vector<iovec>& out) {
  out.clear();
  std::uint64_t n = 0;
  auto* dst = static_cast<unsigned char*>(job.dst);
  while (piece < job.pieces.size() && out.size() < Holder::kMaxLocalPieces && n < limit) {
    const auto& p = job.pieces[piece];
    const std::uint64_t take = std::min(p.length - within, limit - n);
    if (take > 0) out.push_back(iovec{dst + p.offset + within, take});
    n += take;
    within += take;
    if (within == p.length) {
      ++piece;
      within = 0;
    }
  }
  return n;
}

}  // namespace tensorhub::transport::cma
