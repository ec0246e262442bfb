#include "grpc_codec.hpp"

#include <algorithm>
#include <string>

#include "tensorhub/core/error.hpp"

namespace tensorhub::coord::codec {
namespace {

[[noreturn]] void malformed(const std::string& what) { throw UserError("malformed coordinator message: " + what); }

template <class T, class Repeated>
std::vector<T> to_vector(const Repeated& field) {
  return std::vector<T>(field.begin(), field.end());
}

template <class Repeated, class Vector>
void append_all(Repeated* field, const Vector& values) {
  field->Reserve(static_cast<int>(values.size()));
  for (const auto& v : values) field->Add(v);
}

template <class Repeated, class Vector>
void append_strings(Repeated* field, const Vector& values) {
  field->Reserve(static_cast<int>(values.size()));
  for (const auto& v : values) *field->Add() = v;
}

// A missing sub-message means the struct default (e.g. Group{"", 1, 0}).
Group group_or_default(bool present, const pb::Group& group) { return present ? from_proto(group) : Group{}; }

}  // namespace

// ---- core ------------------------------------------------------------------------------------

pb::DType to_proto(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return pb::DTYPE_F32;
    case DType::kF16:
      return pb::DTYPE_F16;
    case DType::kBF16:
      return pb::DTYPE_BF16;
    case DType::kF64:
      return pb::DTYPE_F64;
    case DType::kI8:
      return pb::DTYPE_I8;
    case DType::kU8:
      return pb::DTYPE_U8;
    case DType::kI16:
      return pb::DTYPE_I16;
    case DType::kI32:
      return pb::DTYPE_I32;
    case DType::kI64:
      return pb::DTYPE_I64;
    case DType::kBool:
      return pb::DTYPE_BOOL;
  }
  throw ContractViolation("internal error: unknown DType enumerator " + std::to_string(static_cast<int>(dtype)));
}

DType from_proto(pb::DType dtype) {
  switch (dtype) {
    case pb::DTYPE_F32:
      return DType::kF32;
    case pb::DTYPE_F16:
      return DType::kF16;
    case pb::DTYPE_BF16:
      return DType::kBF16;
    case pb::DTYPE_F64:
      return DType::kF64;
    case pb::DTYPE_I8:
      return DType::kI8;
    case pb::DTYPE_U8:
      return DType::kU8;
    case pb::DTYPE_I16:
      return DType::kI16;
    case pb::DTYPE_I32:
      return DType::kI32;
    case pb::DTYPE_I64:
      return DType::kI64;
    case pb::DTYPE_BOOL:
      return DType::kBool;
    default:
      break;  // DTYPE_UNSPECIFIED, and values from a newer or broken peer
  }
  malformed("unknown dtype value " + std::to_string(static_cast<int>(dtype)));
}

pb::TensorSpec to_proto(const TensorSpec& spec) {
  pb::TensorSpec out;
  out.set_name(spec.name);
  out.set_dtype(to_proto(spec.dtype));
  append_all(out.mutable_shape(), spec.shape);
  return out;
}

TensorSpec from_proto(const pb::TensorSpec& spec) {
  TensorSpec out;
  out.name = spec.name();
  try {
    out.dtype = from_proto(spec.dtype());
  } catch (const UserError&) {
    malformed("tensor '" + spec.name() + "': unknown dtype value " + std::to_string(spec.dtype()));
  }
  out.shape = to_vector<std::int64_t>(spec.shape());
  if (std::any_of(out.shape.begin(), out.shape.end(), [](std::int64_t d) { return d < 0; })) {
    malformed("tensor '" + out.name + "' has a negative dimension");
  }
  return out;
}

pb::ChunkSpec to_proto(const ChunkSpec& chunk) {
  pb::ChunkSpec out;
  out.set_tensor(chunk.tensor);
  out.set_offset(chunk.offset);
  out.set_length(chunk.length);
  out.set_checksum(chunk.checksum);
  return out;
}

ChunkSpec from_proto(const pb::ChunkSpec& chunk) {
  return ChunkSpec{chunk.tensor(), chunk.offset(), chunk.length(), chunk.checksum()};
}

pb::ShardManifest to_proto(const ShardManifest& shard) {
  pb::ShardManifest out;
  out.set_shard(shard.shard);
  for (const auto& t : shard.tensors) *out.add_tensors() = to_proto(t);
  for (const auto& row : shard.checksums) append_all(out.add_checksums()->mutable_values(), row);
  return out;
}

ShardManifest from_proto(const pb::ShardManifest& shard) {
  ShardManifest out;
  out.shard = shard.shard();
  out.tensors.reserve(static_cast<std::size_t>(shard.tensors_size()));
  for (const auto& t : shard.tensors()) out.tensors.push_back(from_proto(t));
  out.checksums.reserve(static_cast<std::size_t>(shard.checksums_size()));
  for (const auto& row : shard.checksums()) out.checksums.push_back(to_vector<std::uint64_t>(row.values()));
  return out;
}

pb::TensorEntry to_proto(const TensorEntry& entry) {
  pb::TensorEntry out;
  *out.mutable_spec() = to_proto(entry.spec);
  out.set_shard(entry.shard);
  out.set_first_chunk(entry.first_chunk);
  out.set_num_chunks(entry.num_chunks);
  return out;
}

TensorEntry from_proto(const pb::TensorEntry& entry) {
  if (!entry.has_spec()) malformed("tensor entry without a spec");
  TensorEntry out;
  out.spec = from_proto(entry.spec());
  out.shard = entry.shard();
  out.first_chunk = entry.first_chunk();
  out.num_chunks = entry.num_chunks();
  return out;
}

pb::Manifest to_proto(const Manifest& manifest) {
  pb::Manifest out;
  out.set_model(manifest.model);
  out.set_version(manifest.version);
  out.set_chunk_bytes(manifest.chunk_bytes);
  out.set_num_shards(manifest.num_shards);
  out.mutable_tensors()->Reserve(static_cast<int>(manifest.tensors.size()));
  for (const auto& t : manifest.tensors) *out.add_tensors() = to_proto(t);
  out.mutable_chunks()->Reserve(static_cast<int>(manifest.chunks.size()));
  for (const auto& c : manifest.chunks) *out.add_chunks() = to_proto(c);
  return out;
}

Manifest from_proto(const pb::Manifest& manifest) {
  Manifest out;
  out.model = manifest.model();
  out.version = manifest.version();
  out.chunk_bytes = manifest.chunk_bytes();
  out.num_shards = manifest.num_shards();
  const std::string where = "manifest of '" + out.model + "' version " + std::to_string(out.version);
  if (out.chunk_bytes == 0) malformed(where + ": chunk size is zero");
  out.tensors.reserve(static_cast<std::size_t>(manifest.tensors_size()));
  for (const auto& t : manifest.tensors()) out.tensors.push_back(from_proto(t));
  out.chunks.reserve(static_cast<std::size_t>(manifest.chunks_size()));
  for (const auto& c : manifest.chunks()) out.chunks.push_back(from_proto(c));
  // Readers index chunks by tensor and tensors by chunk; check every index once here.
  for (const auto& e : out.tensors) {
    if (e.shard >= out.num_shards) {
      malformed(where + ": tensor '" + e.spec.name + "' names shard " + std::to_string(e.shard) + " of " +
                std::to_string(out.num_shards));
    }
    if (std::uint64_t{e.first_chunk} + e.num_chunks > out.chunks.size()) {
      malformed(where + ": tensor '" + e.spec.name + "' chunk range exceeds the chunk list");
    }
  }
  for (std::size_t i = 0; i < out.chunks.size(); ++i) {
    if (out.chunks[i].tensor >= out.tensors.size()) {
      malformed(where + ": chunk " + std::to_string(i) + " names tensor " + std::to_string(out.chunks[i].tensor) +
                " of " + std::to_string(out.tensors.size()));
    }
  }
  return out;
}

// ---- coordinator -----------------------------------------------------------------------------

pb::WorkerInfo to_proto(const WorkerInfo& info) {
  pb::WorkerInfo out;
  out.set_endpoint(info.endpoint);
  out.set_transport(info.transport);
  out.set_host(info.host);
  out.set_rack(info.rack);
  out.set_dc(info.dc);
  out.set_rank(info.rank);
  if (info.numa >= 0) out.set_numa(info.numa);
  if (info.gpu >= 0) out.set_gpu(info.gpu);
  return out;
}

WorkerInfo from_proto(const pb::WorkerInfo& info) {
  WorkerInfo out;
  out.endpoint = info.endpoint();
  out.transport = info.transport();
  out.host = info.host();
  out.rack = info.rack();
  out.dc = info.dc();
  out.rank = info.rank();
  out.numa = info.has_numa() && info.numa() >= 0 ? info.numa() : -1;
  out.gpu = info.has_gpu() && info.gpu() >= 0 ? info.gpu() : -1;
  return out;
}

pb::Group to_proto(const Group& group) {
  pb::Group out;
  out.set_name(group.name);
  out.set_size(group.size);
  out.set_rank(group.rank);
  return out;
}

Group from_proto(const pb::Group& group) {
  if (group.size() == 0) malformed("group '" + group.name() + "' has size 0");
  if (group.rank() >= group.size()) {
    malformed("group '" + group.name() + "': rank " + std::to_string(group.rank()) + " outside size " +
              std::to_string(group.size()));
  }
  return Group{group.name(), group.size(), group.rank()};
}

pb::PublishRequest to_proto(const PublishRequest& request) {
  pb::PublishRequest out;
  out.set_worker(request.worker);
  out.set_model(request.model);
  out.set_version(request.version);
  out.set_chunk_bytes(request.chunk_bytes);
  *out.mutable_group() = to_proto(request.group);
  *out.mutable_shard() = to_proto(request.shard);
  append_strings(out.mutable_regions(), request.regions);
  return out;
}

PublishRequest from_proto(const pb::PublishRequest& request) {
  if (!request.has_shard()) malformed("publish request without a shard manifest");
  PublishRequest out;
  out.worker = request.worker();
  out.model = request.model();
  out.version = request.version();
  out.chunk_bytes = request.chunk_bytes();
  out.group = group_or_default(request.has_group(), request.group());
  out.shard = from_proto(request.shard());
  out.regions = to_vector<std::string>(request.regions());
  return out;
}

pb::PublishReply to_proto(const PublishReply& reply) {
  pb::PublishReply out;
  out.set_committed(reply.committed);
  return out;
}

PublishReply from_proto(const pb::PublishReply& reply) { return PublishReply{reply.committed()}; }

pb::ResolveRequest to_proto(const ResolveRequest& request) {
  pb::ResolveRequest out;
  out.set_reader(request.reader);
  out.set_model(request.model);
  if (request.version) out.set_version(*request.version);
  *out.mutable_group() = to_proto(request.group);
  out.set_seq(request.seq);
  return out;
}

ResolveRequest from_proto(const pb::ResolveRequest& request) {
  ResolveRequest out;
  out.reader = request.reader();
  out.model = request.model();
  if (request.has_version()) out.version = request.version();
  out.group = group_or_default(request.has_group(), request.group());
  out.seq = request.seq();
  return out;
}

pb::ResolveReply to_proto(const ResolveReply& reply) {
  pb::ResolveReply out;
  *out.mutable_manifest() = to_proto(reply.manifest);
  out.set_snapshot(reply.snapshot);
  return out;
}

ResolveReply from_proto(const pb::ResolveReply& reply) {
  if (!reply.has_manifest()) malformed("resolve reply without a manifest");
  return ResolveReply{from_proto(reply.manifest()), reply.snapshot()};
}

pb::RelayOffer to_proto(const RelayOffer& offer) {
  pb::RelayOffer out;
  out.set_reader(offer.reader);
  out.set_model(offer.model);
  out.set_version(offer.version);
  append_strings(out.mutable_regions(), offer.regions);
  return out;
}

RelayOffer from_proto(const pb::RelayOffer& offer) {
  RelayOffer out;
  out.reader = offer.reader();
  out.model = offer.model();
  out.version = offer.version();
  out.regions = to_vector<std::string>(offer.regions());
  return out;
}

pb::AcquireRequest to_proto(const AcquireRequest& request) {
  pb::AcquireRequest out;
  out.set_reader(request.reader);
  out.set_model(request.model);
  out.set_version(request.version);
  append_all(out.mutable_chunks(), request.chunks);
  out.set_max_assign(request.max_assign);
  return out;
}

AcquireRequest from_proto(const pb::AcquireRequest& request) {
  AcquireRequest out;
  out.reader = request.reader();
  out.model = request.model();
  out.version = request.version();
  out.chunks = to_vector<std::uint32_t>(request.chunks());
  out.max_assign = request.max_assign();
  return out;
}

pb::Assignment to_proto(const Assignment& assignment) {
  pb::Assignment out;
  out.set_chunk(assignment.chunk);
  out.set_holder(assignment.holder);
  out.set_endpoint(assignment.endpoint);
  out.set_region(assignment.region);
  out.set_offset(assignment.offset);
  out.set_origin(assignment.origin);
  return out;
}

Assignment from_proto(const pb::Assignment& assignment) {
  Assignment out;
  out.chunk = assignment.chunk();
  out.holder = assignment.holder();
  out.endpoint = assignment.endpoint();
  out.region = assignment.region();
  out.offset = assignment.offset();
  out.origin = assignment.origin();
  return out;
}

pb::AcquireReply to_proto(const AcquireReply& reply) {
  pb::AcquireReply out;
  for (const auto& a : reply.assignments) *out.add_assignments() = to_proto(a);
  append_all(out.mutable_unavailable(), reply.unavailable);
  return out;
}

AcquireReply from_proto(const pb::AcquireReply& reply) {
  AcquireReply out;
  out.assignments.reserve(static_cast<std::size_t>(reply.assignments_size()));
  for (const auto& a : reply.assignments()) out.assignments.push_back(from_proto(a));
  out.unavailable = to_vector<std::uint32_t>(reply.unavailable());
  return out;
}

pb::ChunkResult to_proto(const ChunkResult& result) {
  pb::ChunkResult out;
  out.set_chunk(result.chunk);
  out.set_holder(result.holder);
  out.set_ok(result.ok);
  return out;
}

ChunkResult from_proto(const pb::ChunkResult& result) {
  return ChunkResult{result.chunk(), result.holder(), result.ok()};
}

pb::CompleteRequest to_proto(const CompleteRequest& request) {
  pb::CompleteRequest out;
  out.set_reader(request.reader);
  out.set_model(request.model);
  out.set_version(request.version);
  for (const auto& r : request.results) *out.add_results() = to_proto(r);
  append_all(out.mutable_now_held(), request.now_held);
  return out;
}

CompleteRequest from_proto(const pb::CompleteRequest& request) {
  CompleteRequest out;
  out.reader = request.reader();
  out.model = request.model();
  out.version = request.version();
  out.results.reserve(static_cast<std::size_t>(request.results_size()));
  for (const auto& r : request.results()) out.results.push_back(from_proto(r));
  out.now_held = to_vector<std::uint32_t>(request.now_held());
  return out;
}

pb::FinishRequest to_proto(const FinishRequest& request) {
  pb::FinishRequest out;
  out.set_reader(request.reader);
  out.set_model(request.model);
  out.set_version(request.version);
  *out.mutable_group() = to_proto(request.group);
  out.set_seq(request.seq);
  return out;
}

FinishRequest from_proto(const pb::FinishRequest& request) {
  FinishRequest out;
  out.reader = request.reader();
  out.model = request.model();
  out.version = request.version();
  out.group = group_or_default(request.has_group(), request.group());
  out.seq = request.seq();
  return out;
}

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
