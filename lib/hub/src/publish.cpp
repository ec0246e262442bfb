// Publisher: validate, checksum, expose, register. Copies no tensor bytes.
#include <utility>

#include "publisher.hpp"
#include "puller.hpp"

namespace tensorhub {

void Publisher::publish(const std::string& model, std::uint64_t version, std::span<const Tensor> tensors,
                        const std::optional<Group>& group) {
  if (table_.has_origin(model, version)) {
    throw UserError(vname(model, version) + " is already published by this rank; versions are immutable");
  }
  const auto g = group_or_solo(group, "publisher-w", ctx_.id());
  // One pass over the shard's bytes for the per-chunk checksums (no copy).
  ShardManifest shard = describe_shard(g.rank, tensors, ctx_.options.chunk_bytes);

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
