// grpc_codec, status and the rest: holder, version and model status, attach snapshot, offload
// lease and wire timeouts.
#include <algorithm>
#include <cstdint>
#include <string>

#include "grpc_codec.hpp"
#include "grpc_codec_util.hpp"

namespace tensorhub::coord::codec {

using detail::malformed;

pb::HolderStatus to_proto(const HolderStatus& status) {
  pb::HolderStatus out;
  out.set_worker(status.worker);
  out.set_host(status.host);
  out.set_rank(status.rank);
  out.set_origin(status.origin);
  out.set_withdrawn(status.withdrawn);
  out.set_pins(status.pins);
  out.set_chunks_held(status.chunks_held);
  out.set_chunks_total(status.chunks_total);
  return out;
}

HolderStatus from_proto(const pb::HolderStatus& status) {
  HolderStatus out;
  out.worker = status.worker();
  out.host = status.host();
  out.rank = status.rank();
  out.origin = status.origin();
  out.withdrawn = status.withdrawn();
  out.pins = status.pins();
  out.chunks_held = status.chunks_held();
  out.chunks_total = status.chunks_total();
  return out;
}

pb::VersionStatus to_proto(const VersionStatus& status) {
  pb::VersionStatus out;
  out.set_version(status.version);
  out.set_committed(status.committed);
  out.set_readable(status.readable);
  out.set_retained(status.retained);
  out.set_holders(status.holders);
  out.set_origin_holders(status.origin_holders);
  out.set_pins(status.pins);
  out.set_bytes(status.bytes);
  out.set_snapshot(status.snapshot);
  out.mutable_holder_list()->Reserve(static_cast<int>(status.holder_list.size()));
  for (const auto& h : status.holder_list) *out.add_holder_list() = to_proto(h);
  for (const auto& seed : status.wan_seeds) {
    auto* x = out.add_wan_seeds();
    x->set_dc(seed.dc);
    x->set_worker(seed.worker);
  }
  out.set_tensors(status.tensors);
  for (const auto& g : status.global_tensors) {
    auto* x = out.add_global_tensors();
    *x->mutable_tensor() = to_proto(g.tensor);
    x->set_boxes(g.boxes);
  }
  return out;
}

VersionStatus from_proto(const pb::VersionStatus& status) {
  VersionStatus out;
  out.version = status.version();
  out.committed = status.committed();
  out.readable = status.readable();
  out.retained = status.retained();
  out.holders = status.holders();
  out.origin_holders = status.origin_holders();
  out.pins = status.pins();
  out.bytes = status.bytes();
  out.snapshot = status.snapshot();
  out.holder_list.reserve(static_cast<std::size_t>(status.holder_list_size()));
  for (const auto& h : status.holder_list()) out.holder_list.push_back(from_proto(h));
  out.wan_seeds.reserve(static_cast<std::size_t>(status.wan_seeds_size()));
  for (const auto& seed : status.wan_seeds()) out.wan_seeds.push_back(WanSeed{seed.dc(), seed.worker()});
  out.tensors = status.tensors();
  if (static_cast<std::uint64_t>(status.global_tensors_size()) > status.tensors()) {
    malformed("version status lists " + std::to_string(status.global_tensors_size()) + " global tensors but only " +
              std::to_string(status.tensors()) + " tensors");
  }
  out.global_tensors.reserve(static_cast<std::size_t>(status.global_tensors_size()));
  for (const auto& g : status.global_tensors()) {
    auto spec = from_proto(g.tensor());  // dtype and dimensions checked there
    if (spec.sliced()) malformed("global tensor '" + spec.name + "' of a version status is itself a box");
    out.global_tensors.push_back(GlobalTensorStatus{std::move(spec), g.boxes()});
  }
  return out;
}

pb::ModelStatus to_proto(const ModelStatus& status) {
  pb::ModelStatus out;
  out.set_model(status.model);
  for (const auto& v : status.versions) *out.add_versions() = to_proto(v);
  return out;
}

ModelStatus from_proto(const pb::ModelStatus& status) {
  ModelStatus out;
  out.model = status.model();
  out.versions.reserve(static_cast<std::size_t>(status.versions_size()));
  for (const auto& v : status.versions()) out.versions.push_back(from_proto(v));
  return out;
}

pb::StatusReply to_proto(const std::vector<ModelStatus>& models) {
  pb::StatusReply out;
  for (const auto& m : models) *out.add_models() = to_proto(m);
  return out;
}

std::vector<ModelStatus> from_proto(const pb::StatusReply& reply) {
  std::vector<ModelStatus> out;
  out.reserve(static_cast<std::size_t>(reply.models_size()));
  for (const auto& m : reply.models()) out.push_back(from_proto(m));
  return out;
}

pb::AttachSnapshotRequest attach_to_proto(const std::string& path, const Manifest& manifest) {
  pb::AttachSnapshotRequest out;
  out.set_path(path);
  *out.mutable_manifest() = to_proto(manifest);
  return out;
}

std::pair<std::string, Manifest> from_proto(const pb::AttachSnapshotRequest& request) {
  if (!request.has_manifest()) malformed("attach_snapshot request without a manifest");
  return {request.path(), from_proto(request.manifest())};
}

pb::BeginOffloadReply to_proto(const OffloadLease& lease) {
  pb::BeginOffloadReply out;
  switch (lease.state) {
    case OffloadState::kWrite:
      out.set_state(pb::OFFLOAD_STATE_WRITE);
      break;
    case OffloadState::kWait:
      out.set_state(pb::OFFLOAD_STATE_WAIT);
      break;
    case OffloadState::kDone:
      out.set_state(pb::OFFLOAD_STATE_DONE);
      break;
  }
  out.set_holder(lease.holder);
  return out;
}

OffloadLease from_proto(const pb::BeginOffloadReply& reply) {
  OffloadLease out;
  out.holder = reply.holder();
  switch (reply.state()) {
    case pb::OFFLOAD_STATE_WRITE:
      out.state = OffloadState::kWrite;
      return out;
    case pb::OFFLOAD_STATE_WAIT:
      out.state = OffloadState::kWait;
      return out;
    case pb::OFFLOAD_STATE_DONE:
      out.state = OffloadState::kDone;
      return out;
    default:
      break;
  }
  malformed("unknown offload state " + std::to_string(static_cast<int>(reply.state())));
}

std::uint64_t timeout_to_proto(std::chrono::milliseconds timeout) {
  return timeout.count() <= 0 ? 0 : static_cast<std::uint64_t>(timeout.count());
}

std::chrono::milliseconds timeout_from_proto(std::uint64_t timeout_ms) {
  const auto max = static_cast<std::uint64_t>(kMaxWireTimeout.count());
  return std::chrono::milliseconds(static_cast<std::int64_t>(std::min(timeout_ms, max)));
}

}  // namespace tensorhub::coord::codec
