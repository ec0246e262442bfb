// lib/snapshot format versions: files are written in format 2 (the HDF5 1.10 file format, whose
// metadata blocks HDF5 checksums; fixed-size string attributes only) and format-1 files (the
// committed fixture tests/data/snapshot/format1_policy_v7.h5, written by the format-1 writer:
// variable-length strings, 1.8 file format, XXH64 sums) and format2_policy_v3.h5 (format 2, XXH64
// sums) still inspect, verify and read.
#include <gtest/gtest.h>
#include <hdf5.h>

#include <cstdint>
#include <string>
#include <vector>

#include "../snapshot/snapshot_test_util.hpp"
#include "tensorhub/snapshot/snapshot.hpp"

namespace tensorhub::snapshot {
namespace {

const std::string kFormat1 = std::string(TENSORHUB_SNAPSHOT_DATA_DIR) + "/format1_policy_v7.h5";
const std::string kFormat2 = std::string(TENSORHUB_SNAPSHOT_DATA_DIR) + "/format2_policy_v3.h5";

TEST(SnapshotFormat, Format1FilesStillRead) {
  const auto info = inspect(kFormat1);
  EXPECT_EQ(info.format_version, 1u);
  EXPECT_EQ(info.manifest.checksum_algorithm, ChecksumAlgorithm::kXxh64);
  EXPECT_EQ(info.manifest.model, "policy");
  EXPECT_EQ(info.manifest.version, 7u);
  ASSERT_EQ(info.manifest.tensors.size(), 2u);
  EXPECT_TRUE(verify(kFormat1).ok());
  std::vector<unsigned char> w(5000), norm(64);
  std::vector<Tensor> into{host_tensor("layers.0.w", DType::kU8, {5000}, w.data()),
                           host_tensor("norm", DType::kBF16, {32}, norm.data())};
  read(kFormat1, into, /*verify=*/true);
  for (std::size_t i = 0; i < w.size(); ++i) ASSERT_EQ(w[i], static_cast<unsigned char>(i * 7)) << i;
  for (std::size_t i = 0; i < norm.size(); ++i) ASSERT_EQ(norm[i], static_cast<unsigned char>(i + 1)) << i;
}

// Format 2 (XXH64 sums, manifest JSON format 1), written by the format-2 writer
// (snapshot_tool write-sample before the format bump): inspect, verify and a verified read.
TEST(SnapshotFormat, Format2FilesWithXxh64SumsStillRead) {
  const auto info = inspect(kFormat2);
  EXPECT_EQ(info.format_version, 2u);
  EXPECT_EQ(info.manifest.checksum_algorithm, ChecksumAlgorithm::kXxh64);
  EXPECT_EQ(info.manifest.model, "policy");
  ASSERT_EQ(info.manifest.tensors.size(), 5u);
  EXPECT_TRUE(verify(kFormat2).ok());
  std::vector<float> w(6);
  std::vector<Tensor> into{host_tensor("layers.0.w", DType::kF32, {2, 3}, w.data())};
  read(kFormat2, into, /*verify=*/true);
  EXPECT_EQ(w, (std::vector<float>{1.5f, -2.0f, 3.25f, 0.0f, 0.001f, 65504.0f}));
}

// A version published with XXH64 sums (an older peer) is written in format 3 as it is: the
// sums stay XXH64, in the attribute named after them, and read back verified.
TEST(SnapshotFormat, Xxh64ManifestsAreWrittenAsXxh64) {
  testing::TempDir dir;
  const std::string path = dir.file("old-sums.h5");
  std::vector<unsigned char> w(5000, 3);
  const std::vector<Tensor> t{host_tensor("w", DType::kU8, {5000}, w.data())};
  write(path, assemble_manifest("policy", 1, 4096, {describe_shard(0, t, 4096, ChecksumAlgorithm::kXxh64)}), t);
  const auto info = inspect(path);
  EXPECT_EQ(info.format_version, 3u);
  EXPECT_EQ(info.manifest.checksum_algorithm, ChecksumAlgorithm::kXxh64);
  const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  ASSERT_GE(f, 0);
  EXPECT_GT(H5Aexists_by_name(f, "/tensors/w", "tensorhub_chunk_xxh64", H5P_DEFAULT), 0);
  EXPECT_EQ(H5Aexists_by_name(f, "/tensors/w", "tensorhub_chunk_xxh3_64", H5P_DEFAULT), 0);
  H5Fclose(f);
  std::vector<unsigned char> back(5000);
  std::vector<Tensor> into{host_tensor("w", DType::kU8, {5000}, back.data())};
  read(path, into, /*verify=*/true);
  EXPECT_EQ(back, w);
}

TEST(SnapshotFormat, NewFilesAreFormat3WithXxh3SumsChecksummedMetadataAndFixedSizeStrings) {
  testing::TempDir dir;
  const std::string path = dir.file("v2.h5");
  std::vector<unsigned char> w(5000, 3);
  const std::vector<Tensor> t{host_tensor("w", DType::kU8, {5000}, w.data())};
  write(path, assemble_manifest("policy", 1, 4096, {describe_shard(0, t, 4096)}), t);
  EXPECT_EQ(inspect(path).format_version, 3u);
  EXPECT_EQ(inspect(path).manifest.checksum_algorithm, ChecksumAlgorithm::kXxh3_64);
  const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  ASSERT_GE(f, 0);
  EXPECT_GT(H5Aexists_by_name(f, "/tensors/w", "tensorhub_chunk_xxh3_64", H5P_DEFAULT), 0);
  // Superblock version 3 is the 1.10 format (checksummed superblock and object headers).
  H5F_info2_t fi{};
  ASSERT_GE(H5Fget_info2(f, &fi), 0);
  EXPECT_GE(fi.super.version, 3u);
  for (const char* name : {"model", "manifest", "created_by", "created_at"}) {
    const hid_t a = H5Aopen(f, name, H5P_DEFAULT);
    ASSERT_GE(a, 0) << name;
    const hid_t type = H5Aget_type(a);
    EXPECT_EQ(H5Tis_variable_str(type), 0) << name << " is a variable-length string";
    H5Tclose(type);
    H5Aclose(a);
  }
  H5Fclose(f);
}

}  // namespace
}  // namespace tensorhub::snapshot
