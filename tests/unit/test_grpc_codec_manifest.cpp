// The manifest on the wire (grpc_codec_manifest.cpp): the compact chunk table (checksums only)
// whenever the table is the canonical cut, the full one otherwise; both decode to the same
// manifest, and a decoder refuses either form when its indices do not add up. The encoding
// cache of the gRPC service (grpc_manifest_cache.hpp).
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "grpc_codec.hpp"
#include "grpc_manifest_cache.hpp"
#include "tensorhub/core/error.hpp"
#include "tensorhub/core/manifest.hpp"

namespace tensorhub::coord {
namespace {

namespace pb = ::tensorhub::v1;
using codec::from_proto;
using codec::to_proto;

pb::Manifest over_wire(const pb::Manifest& message) {
  pb::Manifest parsed;
  EXPECT_TRUE(parsed.ParseFromString(message.SerializeAsString()));
  return parsed;
}

// Two shards, four tensors; "a.w" and "b.w" are cut into 3 chunks (the last one shorter).
Manifest two_shards() {
  std::vector<ShardManifest> shards;
  for (std::uint32_t s = 0; s < 2; ++s) {
    ShardManifest m;
    m.shard = s;
    const std::string p = s == 0 ? "a" : "b";
    m.tensors = {TensorSpec{p + ".w", DType::kF32, {2500}}, TensorSpec{p + ".b", DType::kU8, {16}}};
    m.checksums = {{10 + s, 20 + s, 30 + s}, {40 + s}};
    shards.push_back(m);
  }
  return assemble_manifest("llama", 3, 4096, std::move(shards));
}

// The full form of `m` (what a table that is not canonical is sent as).
pb::Manifest full_form(const Manifest& m) {
  auto p = to_proto(m);
  p.clear_chunk_checksums();
  for (const auto& c : m.chunks) *p.add_chunks() = to_proto(c);
  return p;
}

TEST(GrpcCodecManifest, CanonicalTableTravelsAsChecksumsOnly) {
  const auto m = two_shards();
  ASSERT_EQ(m.chunks.size(), 8u);
  const auto p = to_proto(m);
  EXPECT_EQ(p.chunks_size(), 0);
  ASSERT_EQ(p.chunk_checksums_size(), 8);
  EXPECT_EQ(p.chunk_checksums(2), m.chunks[2].checksum);
  EXPECT_EQ(from_proto(over_wire(p)), m);
  // The compact form is the smaller one: 8 bytes a chunk against a tag, tensor, offset, length
  // and checksum each.
  EXPECT_LT(p.ByteSizeLong(), full_form(m).ByteSizeLong());
}

// Boxes of a global tensor travel with their tensors (fields 4-6); a message without them (an
// older peer) decodes to plain tensors.
TEST(GrpcCodecManifest, GlobalTensorBoxesRoundTripAndOldMessagesArePlain) {
  std::vector<ShardManifest> shards;
  for (std::uint32_t s = 0; s < 2; ++s) {
    ShardManifest m;
    m.shard = s;
    TensorSpec spec{"w.tp" + std::to_string(s), DType::kBF16, {4, 6}};
    spec.global_name = "w";
    spec.global_shape = {8, 6};
    spec.box_offset = {4 * static_cast<std::int64_t>(s), 0};
    m.tensors = {spec};
    m.checksums = {{7 + s}};
    shards.push_back(m);
  }
  const auto m = assemble_manifest("llama", 4, 4096, std::move(shards));
  const auto back = from_proto(over_wire(to_proto(m)));
  EXPECT_EQ(back, m);
  EXPECT_EQ(back.tensors[1].spec.box_offset, (std::vector<std::int64_t>{4, 0}));
  auto old = to_proto(two_shards());
  for (auto& t : *old.mutable_tensors()) EXPECT_TRUE(t.spec().global_name().empty());
  EXPECT_FALSE(from_proto(over_wire(old)).tensors[0].spec.sliced());
  // A box that leaves a gap is refused when the manifest is validated, as any bad tensor.
  auto gap = to_proto(m);
  gap.mutable_tensors(1)->mutable_spec()->set_box_offset(0, 5);
  EXPECT_THROW(validate_manifest(from_proto(over_wire(gap))), UserError);
}

TEST(GrpcCodecManifest, FullTableStillDecodes) {
  const auto m = two_shards();
  EXPECT_EQ(from_proto(over_wire(full_form(m))), m);
  EXPECT_EQ(from_proto(over_wire(to_proto(Manifest{}))), Manifest{});
}

TEST(GrpcCodecManifest, TableThatIsNotTheCanonicalCutGoesInFull) {
  auto m = two_shards();
  m.chunks[1].length -= 1;  // not where the cut puts it: only the full form says so
  const auto p = to_proto(m);
  EXPECT_EQ(p.chunk_checksums_size(), 0);
  EXPECT_EQ(p.chunks_size(), 8);
  EXPECT_EQ(from_proto(over_wire(p)), m);
}

TEST(GrpcCodecManifest, CompactFormThatDoesNotAddUpIsUserError) {
  const auto good = to_proto(two_shards());
  ASSERT_NO_THROW(from_proto(good));

  auto short_sums = good;
  short_sums.mutable_chunk_checksums()->RemoveLast();
  EXPECT_THROW(from_proto(short_sums), UserError);

  auto long_sums = good;
  long_sums.add_chunk_checksums(7);
  EXPECT_THROW(from_proto(long_sums), UserError);

  auto moved = good;
  moved.mutable_tensors(1)->set_first_chunk(4);
  EXPECT_THROW(from_proto(moved), UserError);

  auto miscounted = good;
  miscounted.mutable_tensors(0)->set_num_chunks(2);
  EXPECT_THROW(from_proto(miscounted), UserError);

  auto huge = good;  // num_chunks far beyond the checksums sent: refused before any allocation
  huge.mutable_tensors(0)->mutable_spec()->set_shape(0, std::int64_t{1} << 40);
  huge.mutable_tensors(0)->set_num_chunks(0xffffffffu);
  EXPECT_THROW(from_proto(huge), UserError);

  auto both = good;
  *both.add_chunks() = to_proto(two_shards().chunks[0]);
  EXPECT_THROW(from_proto(both), UserError);
}

TEST(GrpcCodecManifest, FullFormWithBadIndicesIsUserError) {
  const auto good = full_form(two_shards());

  auto chunk_tensor = good;
  chunk_tensor.mutable_chunks(0)->set_tensor(4);
  EXPECT_THROW(from_proto(chunk_tensor), UserError);

  auto chunk_range = good;
  chunk_range.mutable_tensors(3)->set_num_chunks(2);
  EXPECT_THROW(from_proto(chunk_range), UserError);

  auto overflow = good;
  overflow.mutable_tensors(0)->set_first_chunk(0xffffffffu);
  EXPECT_THROW(from_proto(overflow), UserError);

  auto shard = good;
  shard.mutable_tensors(0)->set_shard(2);
  EXPECT_THROW(from_proto(shard), UserError);

  auto chunk_bytes = good;
  chunk_bytes.set_chunk_bytes(0);
  EXPECT_THROW(from_proto(chunk_bytes), UserError);
}

TEST(ManifestCache, EncodesEachSharedManifestOnce) {
  ManifestCache cache(2);
  const auto a = std::make_shared<const Manifest>(two_shards());
  const auto first = cache.encoded(a);
  EXPECT_EQ(cache.encoded(a), first);  // the same encoding, not a new one
  EXPECT_EQ(cache.encodings(), 1u);
  EXPECT_EQ(from_proto(*first), *a);

  // An equal manifest at another address is another entry; past the capacity the least
  // recently used goes (a stays: it was used last).
  const auto b = std::make_shared<const Manifest>(two_shards());
  const auto c = std::make_shared<const Manifest>(Manifest{});
  (void)cache.encoded(b);
  (void)cache.encoded(a);
  (void)cache.encoded(c);  // evicts b
  EXPECT_EQ(cache.encodings(), 3u);
  (void)cache.encoded(a);
  EXPECT_EQ(cache.encodings(), 3u);
  (void)cache.encoded(b);
  EXPECT_EQ(cache.encodings(), 4u);
  EXPECT_THROW(cache.encoded(nullptr), ContractViolation);
}

// A version's status names its global tensors (resharding); a status whose global tensors are
// boxes themselves, or more than its tensors, is refused.
TEST(GrpcCodecManifest, VersionStatusCarriesGlobalTensors) {
  VersionStatus v;
  v.version = 3;
  v.committed = true;
  v.tensors = 9;
  v.global_tensors = {GlobalTensorStatus{TensorSpec("w", DType::kBF16, {4096, 1024}), 8},
                      GlobalTensorStatus{TensorSpec("e", DType::kF32, {64, 8, 32}), 1}};
  pb::VersionStatus parsed;
  ASSERT_TRUE(parsed.ParseFromString(to_proto(v).SerializeAsString()));
  const auto back = from_proto(parsed);
  EXPECT_EQ(back.tensors, 9u);
  EXPECT_EQ(back.global_tensors, v.global_tensors);

  auto too_many = to_proto(v);
  too_many.set_tensors(1);
  EXPECT_THROW(from_proto(too_many), UserError);
  auto boxed = to_proto(v);
  boxed.mutable_global_tensors(0)->mutable_tensor()->set_global_name("x");
  EXPECT_THROW(from_proto(boxed), UserError);
  auto negative = to_proto(v);
  negative.mutable_global_tensors(1)->mutable_tensor()->set_shape(0, -1);
  EXPECT_THROW(from_proto(negative), UserError);
}

}  // namespace
}  // namespace tensorhub::coord
