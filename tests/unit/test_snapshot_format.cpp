// lib/snapshot format versions: files are written in format 2 (the HDF5 1.10 file format, whose
// metadata blocks HDF5 checksums; fixed-size string attributes only) and format-1 files (the
// committed fixture tests/data/snapshot/format1_policy_v7.h5, written by the format-1 writer:
// variable-length strings, 1.8 file format) still inspect, verify and read.
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

TEST(SnapshotFormat, Format1FilesStillRead) {
  const auto info = inspect(kFormat1);
  EXPECT_EQ(info.format_version, 1u);
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

TEST(SnapshotFormat, NewFilesAreFormat2WithChecksummedMetadataAndFixedSizeStrings) {
  testing::TempDir dir;
  const std::string path = dir.file("v2.h5");
  std::vector<unsigned char> w(5000, 3);
  const std::vector<Tensor> t{host_tensor("w", DType::kU8, {5000}, w.data())};
  write(path, assemble_manifest("policy", 1, 4096, {describe_shard(0, t, 4096)}), t);
  EXPECT_EQ(inspect(path).format_version, 2u);
  const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  ASSERT_GE(f, 0);
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
