// Conversions between the coordinator structs (tensorhub/coord/types.hpp, core/manifest.hpp)
// and their protobuf mirrors (share/proto/tensorhub.proto). Private to tensorhub_coord: only
// grpc_client.cpp, grpc_server.cpp and the codec unit test see generated code.
//
// to_proto never fails for a well-formed struct. from_proto treats its input as untrusted wire
// data: anything the structs cannot represent or that would make later indexing unsafe (unknown
// dtype, negative dimension, out-of-range chunk or tensor index, empty group, rank outside the
// group) throws UserError naming the field, so a bad peer can never crash us. Semantic checks
// (chunk sizes, checksum counts, ...) stay with the coordinator, which applies them to
// in-process callers too.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "tensorhub.pb.h"
#include "tensorhub/coord/types.hpp"
#include "tensorhub/core/dtype.hpp"
#include "tensorhub/core/manifest.hpp"
#include "tensorhub/core/tensor.hpp"

namespace tensorhub::coord::codec {

namespace pb = ::tensorhub::v1;

pb::DType to_proto(DType dtype);
DType from_proto(pb::DType dtype);

pb::TensorSpec to_proto(const TensorSpec& spec);
TensorSpec from_proto(const pb::TensorSpec& spec);

pb::ChunkSpec to_proto(const ChunkSpec& chunk);
ChunkSpec from_proto(const pb::ChunkSpec& chunk);

pb::ShardManifest to_proto(const ShardManifest& shard);
ShardManifest from_proto(const pb::ShardManifest& shard);

pb::TensorEntry to_proto(const TensorEntry& entry);
TensorEntry from_proto(const pb::TensorEntry& entry);

// The chunk table goes out compact (checksums only) when it is the canonical one
// (grpc_codec_manifest.cpp); from_proto accepts both forms.
pb::Manifest to_proto(const Manifest& manifest);
Manifest from_proto(const pb::Manifest& manifest);
// ChecksumAlgorithm <-> its wire number; malformed() for an unknown one.
pb::ChecksumAlgorithm algorithm_to_proto(ChecksumAlgorithm a);
ChecksumAlgorithm algorithm_from_proto(int value, const std::string& where);

pb::WorkerInfo to_proto(const WorkerInfo& info);
WorkerInfo from_proto(const pb::WorkerInfo& info);

pb::Group to_proto(const Group& group);
Group from_proto(const pb::Group& group);

pb::PublishRequest to_proto(const PublishRequest& request);
PublishRequest from_proto(const pb::PublishRequest& request);

pb::PublishReply to_proto(const PublishReply& reply);
PublishReply from_proto(const pb::PublishReply& reply);

pb::ResolveRequest to_proto(const ResolveRequest& request);
ResolveRequest from_proto(const pb::ResolveRequest& request);

pb::ResolveReply to_proto(const ResolveReply& reply);
ResolveReply from_proto(const pb::ResolveReply& reply);

pb::RelayOffer to_proto(const RelayOffer& offer);
RelayOffer from_proto(const pb::RelayOffer& offer);

pb::AcquireRequest to_proto(const AcquireRequest& request);
AcquireRequest from_proto(const pb::AcquireRequest& request);

pb::Assignment to_proto(const Assignment& assignment);
Assignment from_proto(const pb::Assignment& assignment);

pb::AcquireReply to_proto(const AcquireReply& reply);
AcquireReply from_proto(const pb::AcquireReply& reply);

pb::ChunkRange to_proto(const ChunkRange& range);
ChunkRange from_proto(const pb::ChunkRange& range);

pb::PlanRequest to_proto(const PlanRequest& request);
PlanRequest from_proto(const pb::PlanRequest& request);

// Rejects a step whose source index is outside the reply's sources (UserError).
pb::PlanReply to_proto(const PlanReply& reply);
PlanReply from_proto(const pb::PlanReply& reply);

pb::ChunkResult to_proto(const ChunkResult& result);
ChunkResult from_proto(const pb::ChunkResult& result);

pb::CompleteRequest to_proto(const CompleteRequest& request);
CompleteRequest from_proto(const pb::CompleteRequest& request);

pb::FinishRequest to_proto(const FinishRequest& request);
FinishRequest from_proto(const pb::FinishRequest& request);

pb::HolderStatus to_proto(const HolderStatus& status);
HolderStatus from_proto(const pb::HolderStatus& status);

pb::VersionStatus to_proto(const VersionStatus& status);
VersionStatus from_proto(const pb::VersionStatus& status);

pb::ModelStatus to_proto(const ModelStatus& status);
ModelStatus from_proto(const pb::ModelStatus& status);

pb::StatusReply to_proto(const std::vector<ModelStatus>& models);
std::vector<ModelStatus> from_proto(const pb::StatusReply& reply);

pb::WorkerStatus to_proto(const WorkerStatus& status);
WorkerStatus from_proto(const pb::WorkerStatus& status);
pb::WorkersReply to_proto(const std::vector<WorkerStatus>& workers);
std::vector<WorkerStatus> from_proto(const pb::WorkersReply& reply);

pb::AttachSnapshotRequest attach_to_proto(const std::string& path, const Manifest& manifest);
// Rejects a request without a manifest (UserError).
std::pair<std::string, Manifest> from_proto(const pb::AttachSnapshotRequest& request);

pb::BeginOffloadReply to_proto(const OffloadLease& lease);
OffloadLease from_proto(const pb::BeginOffloadReply& reply);

// Timeouts travel as uint64 milliseconds: negative durations become 0.
std::uint64_t timeout_to_proto(std::chrono::milliseconds timeout);
// Clamped to kMaxWireTimeout so that `now + timeout` cannot overflow on the receiving side.
std::chrono::milliseconds timeout_from_proto(std::uint64_t timeout_ms);

// error_details of the FAILED_PRECONDITION status that carries tensorhub::OffloadRequired.
inline constexpr const char* kOffloadRequiredDetail = "tensorhub.OffloadRequired";

// error_details of the NOT_FOUND status that carries tensorhub::UnknownWorker.
inline constexpr const char* kUnknownWorkerDetail = "tensorhub.UnknownWorker";

// The longest wait accepted from the wire (30 days; longer waits are clamped, not rejected).
inline constexpr std::chrono::milliseconds kMaxWireTimeout{30LL * 24 * 3600 * 1000};

}  // namespace tensorhub::coord::codec
