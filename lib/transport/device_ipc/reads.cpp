#include "device_ipc/reads.hpp"

#include <algorithm>
#include <cstdio>
#include <utility>

#include "tensorhub/core/error.hpp"

namespace tensorhub::transport::device_ipc {
namespace {

constexpr std::size_t kMaxHolders = 4096;   // cached pidfds; idle ones are dropped beyond
constexpr std::size_t kMaxMappings = 1024;  // cached imports; idle ones are dropped beyond

std::string handle_key(const std::string& endpoint, const device::IpcHandle& h) {
  // The allocation, not the exported pointer: every range of one allocation shares the import.
  auto copy = h;
  copy.offset = 0;
  return endpoint + "|" + copy.encode();
}

}  // namespace

Reads::Reads(device::Device& device, std::uint32_t streams, std::uint64_t chunk) : device_(device), chunk_(chunk) {
  require(streams > 0 && chunk > 0, "device_ipc: reads need a stream and a chunk size");
  streams_.reserve(streams);
  for (std::uint32_t i = 0; i < streams; ++i) streams_.push_back(device_.create_stream());
}

Reads::~Reads() {
  for (auto& s : streams_) {
    try {
      s.synchronize();
    } catch (const std::exception& e) {  // a failed copy of an abandoned read: nowhere to report it
      std::fprintf(stderr, "tensorhub: device_ipc: a copy failed at shutdown: %s\n", e.what());
    }
  }
}

std::shared_ptr<cma::Holder> Reads::holder_for(const std::string& text, const EndpointText& endpoint) {
  if (const auto it = holders_.find(text); it != holders_.end()) return it->second;
  if (holders_.size() >= kMaxHolders) {
    std::erase_if(holders_, [](const auto& kv) { return kv.second.use_count() == 1; });
  }
  return holders_.emplace(text, std::make_shared<cma::Holder>(endpoint.holder)).first->second;
}

std::shared_ptr<device::IpcMapping> Reads::mapping_for(const std::string& key, const device::IpcHandle& handle,
                                                       const Job& job) {
  auto it = mappings_.find(key);
  if (it == mappings_.end()) {
    if (mappings_.size() >= kMaxMappings) {
      std::erase_if(mappings_, [](const auto& kv) { return kv.second.mapping.use_count() == 1; });
    }
    Cached c;
    c.mapping = std::make_shared<device::IpcMapping>(device_.import_ipc(handle));
    it = mappings_.emplace(key, std::move(c)).first;
  }
  it->second.holder = job.holder;
  it->second.slot = job.slot;
  it->second.generation = job.generation;
  return it->second.mapping;
}

void Reads::sweep() {
  last_sweep_ = std::chrono::steady_clock::now();
  std::erase_if(mappings_, [](const auto& kv) {
    const Cached& c = kv.second;
    if (c.mapping.use_count() > 1) return false;  // a read in flight uses it
    if (!c.holder->alive()) return true;
    std::uint64_t generation = 0;
    return !c.holder->read(nullptr, 0, 0, c.slot, generation).empty() || generation != c.generation;
  });
}

std::string Reads::check(const Job& job) {
  auto& h = *job.holder;
  if (!h.alive()) return h.why_dead();
  std::uint64_t generation = 0;
  if (auto e = h.read(nullptr, 0, 0, job.slot, generation); !e.empty()) return e;
  if (generation != job.generation) {
    return "holder " + h.label() + ": the exposure was withdrawn (unpublished) before the read ended";
  }
  return {};
}

void Reads::post(const std::string& endpoint_text, const EndpointText& endpoint, const DescriptorText& d,
                 const ReadOp& op, bool self) {
  Job job;
  job.holder = holder_for(endpoint_text, endpoint);
  job.dst = static_cast<std::uint8_t*>(op.dst);
  job.kind = op.dst_memory == MemoryKind::kCuda ? device::CopyKind::kDeviceToDevice : device::CopyKind::kDeviceToHost;
  job.length = op.length;
  job.slot = d.slot;
  job.generation = d.generation;
  job.tag = op.tag;
  job.stream = next_stream_++ % streams_.size();
  std::string error = check(job);  // a withdrawn exposure is never opened nor read
  if (error.empty() && op.length > 0) {
    try {
      if (self) {
        job.src = reinterpret_cast<const std::uint8_t*>(static_cast<std::uintptr_t>(d.address)) + op.offset;
      } else {
        job.mapping_key = handle_key(endpoint_text, *d.ipc);
        job.mapping = mapping_for(job.mapping_key, *d.ipc, job);
        // The cached mapping may have been opened through another range of the allocation: its
        // data() is that range's; this range starts at its own offset in the allocation.
        job.src = static_cast<const std::uint8_t*>(job.mapping->base()) + d.ipc->offset + op.offset;
      }
      job.event = std::make_unique<device::Event>(device_.create_event());
      next_chunk(job);
    } catch (const Error& e) {  // DeviceError: the holder's allocation cannot be opened or copied
      if (job.copied > 0) {
        try {
          job.event->synchronize();  // nothing stays queued behind a failed completion
        } catch (const Error&) {
        }
      }
      error = "holder " + job.holder->label() + ": " + e.what();
    }
  }
  if (!error.empty() || op.length == 0) {
    done_.push_back(Completion{op.tag, error.empty(), std::move(error)});
    return;
  }
  jobs_.push_back(std::move(job));
}

void Reads::next_chunk(Job& job) {
  const std::uint64_t n = std::min(chunk_, job.length - job.copied);
  auto& stream = streams_[job.stream];
  device_.copy_async(job.dst + job.copied, job.src + job.copied, n, job.kind, stream);
  job.event->record(stream);
  job.copied += n;
}

void Reads::finish(Job& job, std::string error) {
  if (!error.empty() && !job.mapping_key.empty()) {
    // The holder is gone or withdrew: its allocation may be freed; open it afresh next time.
    const auto it = mappings_.find(job.mapping_key);
    if (it != mappings_.end() && it->second.mapping == job.mapping) mappings_.erase(it);
  }
  const bool ok = error.empty();
  done_.push_back(Completion{job.tag, ok, std::move(error)});
}

void Reads::poll(std::vector<Completion>& out) {
  for (auto it = jobs_.begin(); it != jobs_.end();) {
    Job& job = *it;
    std::string error;
    bool ended = false;
    try {
      if (job.event->ready()) {
        error = check(job);
        if (error.empty() && job.copied < job.length) {
          next_chunk(job);
        } else {
          ended = true;
        }
      }
    } catch (const Error& e) {  // the copy failed (DeviceError), or a message could not be built
      try {
        job.event->synchronize();
      } catch (const Error&) {
      }
      error = "holder " + job.holder->label() + ": device copy failed: " + e.what();
      ended = true;
    }
    if (!ended) {
      ++it;
      continue;
    }
    finish(job, std::move(error));
    it = jobs_.erase(it);
  }
  for (auto& c : done_) out.push_back(std::move(c));
  done_.clear();
  if (!mappings_.empty() && std::chrono::steady_clock::now() - last_sweep_ >= kSweepInterval) sweep();
}

}  // namespace tensorhub::transport::device_ipc
