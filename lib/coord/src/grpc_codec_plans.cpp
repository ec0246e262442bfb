// grpc_codec, plan-based pulls: chunk ranges, the plan request and its reply.
#include <cstdint>
#include <string>

#include "grpc_codec.hpp"
#include "grpc_codec_util.hpp"

namespace tensorhub::coord::codec {

using detail::append_all;
using detail::append_strings;
using detail::malformed;
using detail::ranges_from_proto;
using detail::to_vector;

pb::ChunkRange to_proto(const ChunkRange& range) {
  pb::ChunkRange out;
  out.set_first(range.first);
  out.set_count(range.count);
  return out;
}

ChunkRange from_proto(const pb::ChunkRange& range) { return ChunkRange{range.first(), range.count()}; }

pb::PlanRequest to_proto(const PlanRequest& request) {
  pb::PlanRequest out;
  out.set_reader(request.reader);
  out.set_model(request.model);
  out.set_version(request.version);
  for (const auto& r : request.chunks) *out.add_chunks() = to_proto(r);
  append_all(out.mutable_exclude(), request.exclude);
  return out;
}

PlanRequest from_proto(const pb::PlanRequest& request) {
  PlanRequest out;
  out.reader = request.reader();
  out.model = request.model();
  out.version = request.version();
  out.chunks = ranges_from_proto(request.chunks(), "PlanRequest.chunks");
  if (request.exclude_size() > static_cast<int>(kMaxPlanExclude)) malformed("PlanRequest.exclude: too many");
  out.exclude = to_vector<WorkerId>(request.exclude());
  return out;
}

pb::PlanReply to_proto(const PlanReply& reply) {
  pb::PlanReply out;
  for (const auto& s : reply.sources) {
    auto* p = out.add_sources();
    p->set_holder(s.holder);
    p->set_endpoint(s.endpoint);
    append_strings(p->mutable_regions(), s.regions);
    p->set_progress(s.progress);
    p->set_origin(s.origin);
    p->set_depth(s.depth);
    p->set_same_host(s.same_host);
  }
  for (const auto& s : reply.steps) {
    auto* p = out.add_steps();
    *p->mutable_range() = to_proto(s.range);
    p->set_source(s.source);
  }
  for (const auto& r : reply.waiting) *out.add_waiting() = to_proto(r);
  for (const auto& r : reply.unavailable) *out.add_unavailable() = to_proto(r);
  return out;
}

PlanReply from_proto(const pb::PlanReply& reply) {
  PlanReply out;
  if (reply.sources_size() > static_cast<int>(kMaxPlanRanges) ||
      reply.steps_size() > static_cast<int>(kMaxPlanRanges)) {
    malformed("PlanReply: too many sources or steps");
  }
  out.sources.reserve(static_cast<std::size_t>(reply.sources_size()));
  for (const auto& p : reply.sources()) {
    PlanSource s;
    s.holder = p.holder();
    s.endpoint = p.endpoint();
    s.regions = to_vector<std::string>(p.regions());
    s.progress = p.progress();
    s.origin = p.origin();
    s.depth = p.depth();
    s.same_host = p.same_host();
    out.sources.push_back(std::move(s));
  }
  out.steps.reserve(static_cast<std::size_t>(reply.steps_size()));
  for (const auto& p : reply.steps()) {
    if (p.source() >= out.sources.size()) malformed("PlanStep.source " + std::to_string(p.source()) + " out of range");
    if (std::uint64_t{p.range().first()} + p.range().count() > UINT32_MAX) malformed("PlanStep.range past 2^32 chunks");
    out.steps.push_back(PlanStep{from_proto(p.range()), p.source()});
  }
  out.waiting = ranges_from_proto(reply.waiting(), "PlanReply.waiting");
  out.unavailable = ranges_from_proto(reply.unavailable(), "PlanReply.unavailable");
  return out;
}

}  // namespace tensorhub::coord::codec
