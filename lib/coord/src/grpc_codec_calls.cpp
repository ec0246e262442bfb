// grpc_codec, coordinator calls: worker info, group, and the publish, resolve, relay, acquire,
// complete and finish requests and replies.
#include <cstdint>
#include <memory>
#include <string>

#include "grpc_codec.hpp"
#include "grpc_codec_util.hpp"

namespace tensorhub::coord::codec {

using detail::append_all;
using detail::append_strings;
using detail::malformed;
using detail::ranges_from_proto;
using detail::to_vector;

namespace {

// A missing sub-message means the struct default (e.g. Group{"", 1, 0}).
Group group_or_default(bool present, const pb::Group& group) { return present ? from_proto(group) : Group{}; }

}  // namespace

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
  if (reply.manifest == nullptr) throw ContractViolation("resolve reply without a manifest");
  *out.mutable_manifest() = to_proto(*reply.manifest);
  out.set_snapshot(reply.snapshot);
  out.set_seq(reply.seq);
  return out;
}

ResolveReply from_proto(const pb::ResolveReply& reply) {
  if (!reply.has_manifest()) malformed("resolve reply without a manifest");
  return ResolveReply{std::make_shared<const Manifest>(from_proto(reply.manifest())), reply.snapshot(), reply.seq()};
}

pb::RelayOffer to_proto(const RelayOffer& offer) {
  pb::RelayOffer out;
  out.set_reader(offer.reader);
  out.set_model(offer.model);
  out.set_version(offer.version);
  append_strings(out.mutable_regions(), offer.regions);
  out.set_progress(offer.progress);
  return out;
}

RelayOffer from_proto(const pb::RelayOffer& offer) {
  RelayOffer out;
  out.reader = offer.reader();
  out.model = offer.model();
  out.version = offer.version();
  out.regions = to_vector<std::string>(offer.regions());
  out.progress = offer.progress();
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
  for (const auto& r : request.held_ranges) *out.add_held_ranges() = to_proto(r);
  append_all(out.mutable_release_sources(), request.release_sources);
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
  out.held_ranges = ranges_from_proto(request.held_ranges(), "CompleteRequest.held_ranges");
  if (request.release_sources_size() > static_cast<int>(kMaxPlanExclude)) {
    malformed("CompleteRequest.release_sources: too many");
  }
  out.release_sources = to_vector<WorkerId>(request.release_sources());
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

}  // namespace tensorhub::coord::codec
