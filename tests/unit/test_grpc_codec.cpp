// Round trips of every coordinator message through protobuf and the wire, and rejection of
// malformed wire data (grpc_codec is the only thing between a peer's bytes and our structs).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "grpc_codec.hpp"
#include "tensorhub/core/error.hpp"
#include "tensorhub/core/manifest.hpp"

namespace tensorhub::coord {
namespace {

namespace pb = ::tensorhub::v1;
using codec::from_proto;
using codec::to_proto;

// Serializes and parses back, so every test also crosses the real wire format.
template <class Proto>
Proto over_wire(const Proto& message) {
  Proto parsed;
  EXPECT_TRUE(parsed.ParseFromString(message.SerializeAsString()));
  return parsed;
}

template <class T>
T round_trip(const T& value) {
  return from_proto(over_wire(to_proto(value)));
}

// Not UTF-8, with an embedded NUL: endpoints and regions are opaque bytes.
const std::string kBlob("\xff\x00\x01region\xfe", 10);

ShardManifest sample_shard(std::uint32_t shard, const std::string& prefix) {
  ShardManifest s;
  s.shard = shard;
  s.tensors = {TensorSpec{prefix + ".w", DType::kBF16, {4096, 1024}}, TensorSpec{prefix + ".b", DType::kF32, {1024}}};
  s.checksums = {{0x0123456789abcdefull, 0xfedcba9876543210ull}, {42}};
  return s;
}

Manifest sample_manifest() {
  return assemble_manifest("llama", 7, 4ull << 20, {sample_shard(1, "b"), sample_shard(0, "a")});
}

Group sample_group() { return Group{"tp", 4, 3}; }

void expect_same(const Group& a, const Group& b) {
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.size, b.size);
  EXPECT_EQ(a.rank, b.rank);
}

TEST(GrpcCodec, EveryDTypeRoundTrips) {
  for (const auto d : {DType::kF32, DType::kF16, DType::kBF16, DType::kF64, DType::kI8, DType::kU8, DType::kI16,
                       DType::kI32, DType::kI64, DType::kBool}) {
    EXPECT_EQ(from_proto(to_proto(d)), d) << dtype_name(d);
  }
}

TEST(GrpcCodec, UnknownOrUnsetDTypeIsUserError) {
  EXPECT_THROW(from_proto(pb::DTYPE_UNSPECIFIED), UserError);
  EXPECT_THROW(from_proto(static_cast<pb::DType>(99)), UserError);

  // A TensorSpec as a newer or broken peer would send it: name "w" (field 1), dtype 99 (field 2).
  const std::string wire("\x0a\x01w\x10\x63", 5);
  pb::TensorSpec spec;
  ASSERT_TRUE(spec.ParseFromString(wire));
  EXPECT_THROW(from_proto(spec), UserError);

  // The same inside a publish request.
  PublishRequest request;
  request.shard = sample_shard(0, "x");
  auto message = to_proto(request);
  message.mutable_shard()->mutable_tensors(1)->set_dtype(static_cast<pb::DType>(1000));
  EXPECT_THROW(from_proto(over_wire(message)), UserError);
}

TEST(GrpcCodec, TensorSpecRoundTripsAndRejectsNegativeDimensions) {
  const TensorSpec spec{"layer.0.weight", DType::kI64, {0, 3, 1ll << 40}};
  EXPECT_EQ(round_trip(spec), spec);
  const TensorSpec scalar{"scalar", DType::kBool, {}};
  EXPECT_EQ(round_trip(scalar), scalar);

  auto message = to_proto(spec);
  message.set_shape(1, -3);
  EXPECT_THROW(from_proto(over_wire(message)), UserError);
}

TEST(GrpcCodec, ChunkSpecAndTensorEntryRoundTrip) {
  const ChunkSpec chunk{3, 8ull << 30, 4096, 0xffffffffffffffffull};
  EXPECT_EQ(round_trip(chunk), chunk);
  const TensorEntry entry{TensorSpec{"e", DType::kF16, {2, 2}}, 5, 100, 7};
  EXPECT_EQ(round_trip(entry), entry);
  EXPECT_THROW(from_proto(pb::TensorEntry{}), UserError);  // no spec
}

TEST(GrpcCodec, ShardManifestRoundTrips) {
  const auto shard = sample_shard(2, "s");
  EXPECT_EQ(round_trip(shard), shard);
}

TEST(GrpcCodec, ManifestRoundTrips) {
  const auto manifest = sample_manifest();
  ASSERT_EQ(manifest.num_shards, 2u);
  ASSERT_EQ(manifest.chunks.size(), 6u);
  EXPECT_EQ(round_trip(manifest), manifest);
  EXPECT_EQ(round_trip(Manifest{}), Manifest{});
}

// The algorithm travels with the sums; 0 on the wire (a peer before the field) is XXH64, and a
// value this build does not know is refused.
TEST(GrpcCodec, ChecksumAlgorithmRoundTripsAndUnsetMeansXxh64) {
  auto shard = sample_shard(0, "s");
  ASSERT_EQ(shard.checksum_algorithm, ChecksumAlgorithm::kXxh3_64);
  EXPECT_EQ(to_proto(shard).checksum_algorithm(), pb::CHECKSUM_XXH3_64);
  EXPECT_EQ(round_trip(shard).checksum_algorithm, ChecksumAlgorithm::kXxh3_64);
  shard.checksum_algorithm = ChecksumAlgorithm::kXxh64;
  EXPECT_EQ(round_trip(shard), shard);

  auto old_peer = to_proto(sample_manifest());
  old_peer.clear_checksum_algorithm();
  EXPECT_EQ(from_proto(over_wire(old_peer)).checksum_algorithm, ChecksumAlgorithm::kXxh64);
  auto unknown = to_proto(sample_manifest());
  unknown.set_checksum_algorithm(static_cast<pb::ChecksumAlgorithm>(7));
  EXPECT_THROW(from_proto(over_wire(unknown)), UserError);
  auto unknown_shard = to_proto(sample_shard(0, "s"));
  unknown_shard.set_checksum_algorithm(static_cast<pb::ChecksumAlgorithm>(7));
  EXPECT_THROW(from_proto(over_wire(unknown_shard)), UserError);
}

// The manifest's two chunk-table forms and their checks: test_grpc_codec_manifest.cpp.

TEST(GrpcCodec, WorkerInfoRoundTrips) {
  const WorkerInfo info{kBlob, "mpi_rma", "node-17", "rack-3", "dc-west", 12};
  const auto back = round_trip(info);
  EXPECT_EQ(back.endpoint, info.endpoint);
  EXPECT_EQ(back.transport, info.transport);
  EXPECT_EQ(back.host, info.host);
  EXPECT_EQ(back.rack, info.rack);
  EXPECT_EQ(back.dc, info.dc);
  EXPECT_EQ(back.rank, info.rank);
  EXPECT_EQ(back.numa, -1);
  EXPECT_EQ(back.gpu, -1);
  EXPECT_EQ(round_trip(WorkerInfo{}).rank, -1);
}

TEST(GrpcCodec, WorkerNumaAndGpuLabelsRoundTripAndUnknownStaysUnknown) {
  WorkerInfo info{kBlob, "mpi_rma", "node-17", "rack-3", "dc-west", 12};
  info.numa = 1;
  info.gpu = 0;  // 0 is a real index, not "unset"
  const auto back = round_trip(info);
  EXPECT_EQ(back.numa, 1);
  EXPECT_EQ(back.gpu, 0);
  info.numa = 0;
  info.gpu = 7;
  EXPECT_EQ(round_trip(info).numa, 0);
  EXPECT_EQ(round_trip(info).gpu, 7);
  // -1 (unknown) travels as an absent field and comes back as -1.
  const auto unknown = to_proto(WorkerInfo{});
  EXPECT_FALSE(unknown.has_numa());
  EXPECT_FALSE(unknown.has_gpu());
  EXPECT_EQ(from_proto(over_wire(unknown)).numa, -1);
  EXPECT_EQ(from_proto(over_wire(unknown)).gpu, -1);
  // A peer that sends a negative index means "unknown" too.
  pb::WorkerInfo odd = to_proto(info);
  odd.set_numa(-5);
  EXPECT_EQ(from_proto(over_wire(odd)).numa, -1);
}

TEST(GrpcCodec, GroupRoundTripsAndIsValidated) {
  expect_same(round_trip(sample_group()), sample_group());
  expect_same(round_trip(Group{}), Group{});

  pb::Group empty;
  EXPECT_THROW(from_proto(empty), UserError);  // size 0
  auto outside = to_proto(Group{"g", 2, 0});
  outside.set_rank(2);
  EXPECT_THROW(from_proto(outside), UserError);

  // A request without a group means the default single-rank group.
  pb::FinishRequest finish;
  finish.set_model("m");
  expect_same(from_proto(finish).group, Group{});
}

TEST(GrpcCodec, PublishRoundTrips) {
  PublishRequest request;
  request.worker = 1ull << 50;
  request.model = "llama";
  request.version = 9;
  request.chunk_bytes = 1 << 20;
  request.group = sample_group();
  request.shard = sample_shard(3, "p");
  request.regions = {kBlob, "", "second"};
  const auto back = round_trip(request);
  EXPECT_EQ(back.worker, request.worker);
  EXPECT_EQ(back.model, request.model);
  EXPECT_EQ(back.version, request.version);
  EXPECT_EQ(back.chunk_bytes, request.chunk_bytes);
  expect_same(back.group, request.group);
  EXPECT_EQ(back.shard, request.shard);
  EXPECT_EQ(back.regions, request.regions);

  EXPECT_THROW(from_proto(pb::PublishRequest{}), UserError);  // no shard

  EXPECT_TRUE(round_trip(PublishReply{true}).committed);
  EXPECT_FALSE(round_trip(PublishReply{false}).committed);
}

TEST(GrpcCodec, ResolveRoundTrips) {
  ResolveRequest request;
  request.reader = 77;
  request.model = "m";
  request.group = sample_group();
  request.seq = 123456789012ull;
  for (const auto version :
       {std::optional<std::uint64_t>{}, std::optional<std::uint64_t>{0}, std::optional<std::uint64_t>{5}}) {
    request.version = version;
    const auto back = round_trip(request);
    EXPECT_EQ(back.reader, request.reader);
    EXPECT_EQ(back.model, request.model);
    EXPECT_EQ(back.version, version);  // version 0 stays distinct from "latest"
    expect_same(back.group, request.group);
    EXPECT_EQ(back.seq, request.seq);
  }

  const ResolveReply reply{std::make_shared<const Manifest>(sample_manifest()), ""};
  EXPECT_EQ(*round_trip(reply).manifest, *reply.manifest);
  EXPECT_EQ(round_trip(reply).snapshot, "");
  const ResolveReply backed{std::make_shared<const Manifest>(sample_manifest()), "/snapshots/llama/v7.h5",
                            1234567890123ull};
  EXPECT_EQ(round_trip(backed).snapshot, backed.snapshot);
  EXPECT_EQ(round_trip(backed).seq, backed.seq);
  EXPECT_EQ(*round_trip(backed).manifest, *backed.manifest);
  EXPECT_THROW(from_proto(pb::ResolveReply{}), UserError);  // no manifest
}

TEST(GrpcCodec, RelayOfferRoundTrips) {
  const RelayOffer offer{5, "m", 3, {kBlob, "", "r2"}};
  const auto back = round_trip(offer);
  EXPECT_EQ(back.reader, offer.reader);
  EXPECT_EQ(back.model, offer.model);
  EXPECT_EQ(back.version, offer.version);
  EXPECT_EQ(back.regions, offer.regions);
}

TEST(GrpcCodec, AcquireRoundTrips) {
  const AcquireRequest request{8, "m", 2, {5, 0, 4294967295u}, 3};
  const auto back = round_trip(request);
  EXPECT_EQ(back.reader, request.reader);
  EXPECT_EQ(back.model, request.model);
  EXPECT_EQ(back.version, request.version);
  EXPECT_EQ(back.chunks, request.chunks);
  EXPECT_EQ(back.max_assign, request.max_assign);

  AcquireReply reply;
  reply.assignments = {Assignment{5, 11, kBlob, "region-a", 1ull << 33, true},
                       Assignment{0, 12, "ep", kBlob, 0, false}};
  reply.unavailable = {4294967295u};
  const auto got = round_trip(reply);
  ASSERT_EQ(got.assignments.size(), reply.assignments.size());
  for (std::size_t i = 0; i < got.assignments.size(); ++i) {
    const auto& a = got.assignments[i];
    const auto& b = reply.assignments[i];
    EXPECT_EQ(a.chunk, b.chunk);
    EXPECT_EQ(a.holder, b.holder);
    EXPECT_EQ(a.endpoint, b.endpoint);
    EXPECT_EQ(a.region, b.region);
    EXPECT_EQ(a.offset, b.offset);
    EXPECT_EQ(a.origin, b.origin);
  }
  EXPECT_EQ(got.unavailable, reply.unavailable);
}

TEST(GrpcCodec, CompleteRoundTrips) {
  const CompleteRequest request{9, "m", 4, {ChunkResult{1, 2, true}, ChunkResult{3, 1ull << 60, false}}, {1, 7}};
  const auto back = round_trip(request);
  EXPECT_EQ(back.reader, request.reader);
  EXPECT_EQ(back.model, request.model);
  EXPECT_EQ(back.version, request.version);
  ASSERT_EQ(back.results.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(back.results[i].chunk, request.results[i].chunk);
    EXPECT_EQ(back.results[i].holder, request.results[i].holder);
    EXPECT_EQ(back.results[i].ok, request.results[i].ok);
  }
  EXPECT_EQ(back.now_held, request.now_held);
  EXPECT_TRUE(round_trip(ChunkResult{}).ok);
}

TEST(GrpcCodec, FinishRoundTrips) {
  const FinishRequest request{3, "m", 8, sample_group(), 99};
  const auto back = round_trip(request);
  EXPECT_EQ(back.reader, request.reader);
  EXPECT_EQ(back.model, request.model);
  EXPECT_EQ(back.version, request.version);
  expect_same(back.group, request.group);
  EXPECT_EQ(back.seq, request.seq);
}

TEST(GrpcCodec, StatusRoundTrips) {
  VersionStatus backed{1, true, true, 2, 3, 1, 4, 1ull << 40, "/snap/a/v1.h5", {}};
  backed.wan_seeds = {WanSeed{"dc-east", 9}, WanSeed{"dc-west", 11}};
  backed.holder_list = {HolderStatus{7, "node-3", 5, true, false, 2, 10, 12},
                        HolderStatus{9, "", -1, false, true, 0, 0, 12}};
  const std::vector<ModelStatus> models{
      ModelStatus{"a", {backed, VersionStatus{2, false, false, 0, 1, 1, 0, 5, "", {}}}}, ModelStatus{"b", {}}};
  const auto back = from_proto(over_wire(to_proto(models)));
  ASSERT_EQ(back.size(), models.size());
  for (std::size_t m = 0; m < models.size(); ++m) {
    EXPECT_EQ(back[m].model, models[m].model);
    ASSERT_EQ(back[m].versions.size(), models[m].versions.size());
    for (std::size_t v = 0; v < models[m].versions.size(); ++v) {
      const auto& a = back[m].versions[v];
      const auto& b = models[m].versions[v];
      EXPECT_EQ(a.version, b.version);
      EXPECT_EQ(a.committed, b.committed);
      EXPECT_EQ(a.readable, b.readable);
      EXPECT_EQ(a.retained, b.retained);
      EXPECT_EQ(a.holders, b.holders);
      EXPECT_EQ(a.origin_holders, b.origin_holders);
      EXPECT_EQ(a.pins, b.pins);
      EXPECT_EQ(a.bytes, b.bytes);
      EXPECT_EQ(a.snapshot, b.snapshot);
      EXPECT_EQ(a.wan_seeds, b.wan_seeds);
      ASSERT_EQ(a.holder_list.size(), b.holder_list.size());
      for (std::size_t h = 0; h < a.holder_list.size(); ++h) {
        const auto& x = a.holder_list[h];
        const auto& y = b.holder_list[h];
        EXPECT_EQ(x.worker, y.worker);
        EXPECT_EQ(x.host, y.host);
        EXPECT_EQ(x.rank, y.rank);
        EXPECT_EQ(x.origin, y.origin);
        EXPECT_EQ(x.withdrawn, y.withdrawn);
        EXPECT_EQ(x.pins, y.pins);
        EXPECT_EQ(x.chunks_held, y.chunks_held);
        EXPECT_EQ(x.chunks_total, y.chunks_total);
      }
    }
  }
}

TEST(GrpcCodec, AttachSnapshotRoundTripsAndNeedsAManifest) {
  const auto m = sample_manifest();
  const auto [path, back] = from_proto(over_wire(codec::attach_to_proto("/snap/llama/v7.h5", m)));
  EXPECT_EQ(path, "/snap/llama/v7.h5");
  EXPECT_EQ(back, m);
  EXPECT_THROW(from_proto(pb::AttachSnapshotRequest{}), UserError);
}

TEST(GrpcCodec, OffloadLeaseRoundTripsAndRejectsUnknownStates) {
  for (const auto state : {OffloadState::kWrite, OffloadState::kWait, OffloadState::kDone}) {
    const auto back = round_trip(OffloadLease{state, 12345678901ull});
    EXPECT_EQ(back.state, state);
    EXPECT_EQ(back.holder, 12345678901ull);
  }
  EXPECT_THROW(from_proto(pb::BeginOffloadReply{}), UserError);  // unset state
  pb::BeginOffloadReply future;
  future.set_state(static_cast<pb::OffloadState>(17));
  EXPECT_THROW(from_proto(over_wire(future)), UserError);
}

TEST(GrpcCodec, WorkerStatusRoundTripsAndRejectsUnknownStates) {
  std::vector<WorkerStatus> ws;
  for (const auto state : {WorkerState::kAlive, WorkerState::kSuspect, WorkerState::kDead, WorkerState::kLeft}) {
    WorkerStatus w;
    w.worker = 4503599627370497ull;
    w.info.endpoint = std::string("\x01\x00", 2);
    w.info.host = "n7";
    w.info.rank = 3;
    w.state = state;
    w.silent_ms = 1234;
    w.reason = "lease expired";
    ws.push_back(w);
  }
  const auto back = from_proto(over_wire(codec::to_proto(ws)));
  ASSERT_EQ(back.size(), ws.size());
  for (std::size_t i = 0; i < ws.size(); ++i) {
    EXPECT_EQ(back[i].worker, ws[i].worker);
    EXPECT_EQ(back[i].info.endpoint, ws[i].info.endpoint);
    EXPECT_EQ(back[i].info.rank, 3);
    EXPECT_EQ(back[i].state, ws[i].state);
    EXPECT_EQ(back[i].silent_ms, 1234u);
    EXPECT_EQ(back[i].reason, "lease expired");
  }
  pb::WorkerStatus unset;
  EXPECT_THROW(from_proto(unset), UserError);
  pb::WorkerStatus future;
  future.set_state(static_cast<pb::WorkerState>(9));
  EXPECT_THROW(from_proto(over_wire(future)), UserError);
}

TEST(GrpcCodec, TimeoutsAreClampedNotWrapped) {
  using std::chrono::milliseconds;
  EXPECT_EQ(codec::timeout_to_proto(milliseconds(-5)), 0u);
  EXPECT_EQ(codec::timeout_to_proto(milliseconds(1500)), 1500u);
  EXPECT_EQ(codec::timeout_from_proto(1500), milliseconds(1500));
  EXPECT_EQ(codec::timeout_from_proto(~0ull), codec::kMaxWireTimeout);
}

}  // namespace
}  // namespace tensorhub::coord
