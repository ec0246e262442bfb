// Hub::Impl::publish: validate, checksum, expose, register. Copies no tensor bytes.
#include <utility>

#include "hub_impl.hpp"

namespace tensorhub {

void Hub::Impl::publish(const std::string& model, std::uint64_t version, std::span<const Tensor> tensors,
                        const std::optional<Group>& group) {
  if (model.empty()) throw UserError("publish: empty model name");
  for (const auto& r : references_) {
    if (r.origin && r.model == model && r.version == version) {
      throw UserError("'" + model + "' v" + std::to_string(version) +
                      " is already published by this rank; versions are immutable");
    }
  }
  const auto g = group_or_solo(group, "publisher-w");
  // One pass over the shard's bytes for the per-chunk checksums (no copy).
  ShardManifest shard = describe_shard(g.rank, tensors, options_.chunk_bytes);

  std::vector<transport::MemoryRange> ranges;
  std::vector<ByteRange> byte_ranges;
  for (const auto& t : tensors) {
    ranges.push_back(transport::MemoryRange{t.data, t.spec.bytes(), t.memory});
    const auto b = reinterpret_cast<std::uintptr_t>(t.data);
    byte_ranges.push_back(ByteRange{b, b + t.spec.bytes()});
  }
  withdraw_relays_overlapping(byte_ranges);  // a reader republishing what it pulled
  Reference ref{model,
                version,
                transport_->expose(ranges),
                std::move(byte_ranges),
                true,
                std::vector<Tensor>(tensors.begin(), tensors.end())};

  coord::PublishRequest req;
  req.worker = self_;
  req.model = model;
  req.version = version;
  req.chunk_bytes = options_.chunk_bytes;
  req.group = g;
  req.shard = std::move(shard);
  req.regions = ref.exposure->descriptors();
  const auto reply = client_->publish(req);  // throws: ref goes out of scope, memory detached
  if (reply.committed) log_.info("published and committed '" + model + "' v" + std::to_string(version));
  ref.request = std::move(req);
  references_.push_back(std::move(ref));
}

void Hub::Impl::withdraw_relays_overlapping(const std::vector<ByteRange>& ranges) {
  for (auto it = references_.begin(); it != references_.end();) {
    bool hit = false;
    for (const auto& a : it->ranges) {
      for (const auto& b : ranges) hit = hit || a.overlaps(b);
    }
    if (!hit) {
      ++it;
      continue;
    }
    if (it->origin) {
      throw UserError("buffer overlaps memory published as '" + it->model + "' v" + std::to_string(it->version) +
                      "; unpublish it before reusing the memory");
    }
    try {
      withdraw_or_offload(*it);  // offloads a retained version we are the last holder of
    } catch (const NotFoundError&) {
      // the coordinator already forgot it
    }
    it = references_.erase(it);
  }
}

}  // namespace tensorhub
