// Publisher: validate, expose, checksum, register (publisher.hpp). Copies no tensor bytes.
#include <algorithm>
#include <utility>

#include "publisher.hpp"
#include "puller.hpp"
#include "tensorhub/core/checksum.hpp"
#include "tensorhub/core/shard_hash.hpp"

namespace tensorhub {
namespace {

std::chrono::microseconds since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0);
}

// The checksums of a shard with tensors in device memory: host tensors hashed on the CPU,
// device tensors on the device (the host never reads their bytes).
void hash_mixed_shard(std::span<const Tensor> tensors, std::uint64_t chunk_bytes, HubDevice& device,
                      ShardManifest& shard, const std::atomic<bool>* cancel) {
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    if (tensors[i].memory != MemoryKind::kHost) continue;
    const auto* base = static_cast<const unsigned char*>(tensors[i].data);
    const std::uint64_t bytes = tensors[i].spec.bytes();
    auto& sums = shard.checksums[i];
    for (std::uint32_t c = 0; c < sums.size(); ++c) {
      if (cancel != nullptr && cancel->load()) return;
      const std::uint64_t off = c * chunk_bytes;
      sums[c] = checksum64(shard.checksum_algorithm, base + off, std::min(chunk_bytes, bytes - off));
    }
  }
  device.hash_device_tensors(tensors, chunk_bytes, shard);
}

}  // namespace

PublishJob Publisher::prepare(const std::string& model, std::uint64_t version, std::span<const Tensor> tensors,
                              const std::optional<Group>& group) {
  const auto t0 = std::chrono::steady_clock::now();
  if (table_.has_origin(model, version)) {
    throw UserError(vname(model, version) + " is already published by this rank; versions are immutable");
  }
  const auto g = group_or_solo(group, "publisher-w", ctx_.id());
  for (const auto& t : tensors) {
    if (t.memory == MemoryKind::kCuda && t.data != nullptr) ctx_.device->check_tensor(t, "publish");
  }
  PublishJob job;
  job.started = t0;
  job.model = model;
  job.version = version;
  job.tensors.assign(tensors.begin(), tensors.end());
  job.hash_threads = ctx_.options.hash_threads != 0 ? ctx_.options.hash_threads : default_hash_threads();
  auto& req = job.request;
  req.model = model;
  req.version = version;
  req.chunk_bytes = ctx_.options.chunk_bytes;
  req.group = g;
  req.shard = describe_shard_layout(g.rank, tensors, ctx_.options.chunk_bytes);  // checks; no byte read

  std::vector<transport::MemoryRange> ranges;
  for (const auto& t : tensors) ranges.push_back(transport::MemoryRange{t.data, t.spec.bytes(), t.memory});
  Reference ref{model, version, ctx_.transport.expose(ranges), ranges_of(tensors), true, job.tensors};
  ref.pending = true;
  req.regions = ref.exposure->descriptors();
  for (const auto& t : tensors) job.result.bytes += t.spec.bytes();
  table_.add(std::move(ref));
  job.result.call = since(t0);
  return job;
}

bool Publisher::hash(PublishJob& job, const std::atomic<bool>* cancel) const {
  auto& shard = job.request.shard;
  if (any_device_memory(job.tensors)) {
    hash_mixed_shard(job.tensors, job.request.chunk_bytes, *ctx_.device, shard, cancel);
    job.result.hash_threads = 1;
  } else if (!hash_shard(shard, job.tensors, job.request.chunk_bytes, job.hash_threads, cancel)) {
    return false;
  } else {
    job.result.hash_threads = job.hash_threads;
  }
  job.result.hashed = since(job.started);
  return cancel == nullptr || !cancel->load();
}

void Publisher::commit(PublishJob& job) {
  auto* ref = table_.pending_origin(job.model, job.version);
  require(ref != nullptr, "Publisher::commit: the pending reference is gone");
  job.request.worker = ctx_.id();
  const auto reply = ctx_.client.publish(job.request);  // throws: the caller aborts
  job.result.committed = reply.committed;
  job.result.commit = since(job.started);
  if (reply.committed) ctx_.log.info("published and committed " + vname(job.model, job.version));
  ref->request = std::move(job.request);
  ref->pending = false;
}

void Publisher::abort(const PublishJob& job) noexcept {
  if (table_.pending_origin(job.model, job.version) != nullptr) table_.remove(job.model, job.version, true);
}

}  // namespace tensorhub
