// Publisher: validate, checksum, expose, register. Copies no tensor bytes.
#include <algorithm>
#include <utility>

#include "publisher.hpp"
#include "puller.hpp"
#include "tensorhub/core/checksum.hpp"

namespace tensorhub {
namespace {

// describe_shard for a shard with tensors in device memory: host tensors hashed on the CPU,
// device tensors on the device (the host never reads their bytes).
ShardManifest describe_mixed_shard(std::uint32_t rank, std::span<const Tensor> tensors, std::uint64_t chunk_bytes,
                                   HubDevice& device) {
  for (const auto& t : tensors) {
    if (t.memory == MemoryKind::kCuda && t.data != nullptr) device.check_tensor(t, "publish");
  }
  ShardManifest shard = describe_shard_layout(rank, tensors, chunk_bytes);
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    if (tensors[i].memory != MemoryKind::kHost) continue;
    const auto* base = static_cast<const unsigned char*>(tensors[i].data);
    const std::uint64_t bytes = tensors[i].spec.bytes();
    auto& sums = shard.checksums[i];
    for (std::uint32_t c = 0; c < sums.size(); ++c) {
      const std::uint64_t off = c * chunk_bytes;
      sums[c] = checksum64(shard.checksum_algorithm, base + off, std::min(chunk_bytes, bytes - off));
    }
  }
  device.hash_device_tensors(tensors, chunk_bytes, shard);
  return shard;
}

}  // namespace

void Publisher::publish(const std::string& model, std::uint64_t version, std::span<const Tensor> tensors,
                        const std::optional<Group>& group) {
  if (table_.has_origin(model, version)) {
    throw UserError(vname(model, version) + " is already published by this rank; versions are immutable");
  }
  const auto g = group_or_solo(group, "publisher-w", ctx_.id());
  // One pass over the shard's bytes for the per-chunk checksums (no copy; device memory on the
  // device).
  ShardManifest shard = any_device_memory(tensors)
                            ? describe_mixed_shard(g.rank, tensors, ctx_.options.chunk_bytes, *ctx_.device)
                            : describe_shard(g.rank, tensors, ctx_.options.chunk_bytes);

  std::vector<transport::MemoryRange> ranges;
  for (const auto& t : tensors) ranges.push_back(transport::MemoryRange{t.data, t.spec.bytes(), t.memory});
  Reference ref{model,
                version,
                ctx_.transport.expose(ranges),
                ranges_of(tensors),
                true,
                std::vector<Tensor>(tensors.begin(), tensors.end())};

  coord::PublishRequest req;
  req.worker = ctx_.id();
  req.model = model;
  req.version = version;
  req.chunk_bytes = ctx_.options.chunk_bytes;
  req.group = g;
  req.shard = std::move(shard);
  req.regions = ref.exposure->descriptors();
  const auto reply = ctx_.client.publish(req);  // throws: ref goes out of scope, memory detached
  if (reply.committed) ctx_.log.info("published and committed " + vname(model, version));
  ref.request = std::move(req);
  table_.add(std::move(ref));
}

}  // namespace tensorhub
