// lib/snapshot, bad input: every broken file gives a clear SnapshotError (or ChecksumError for
// damaged data) naming the file and the object, never a crash: missing file, directory,
// non-HDF5 file, truncated file, flipped data bytes (read: ChecksumError; verify: every
// mismatch), wrong format version, no header, garbage or inconsistent manifest, missing group or
// dataset, shape / dtype / attribute mismatches, bad read requests. Files are damaged with the
// HDF5 C API directly (Tamper) or by editing bytes.
#include <gtest/gtest.h>
#include <hdf5.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "../snapshot/snapshot_test_util.hpp"
#include "tensorhub/core/error.hpp"
#include "tensorhub/snapshot/snapshot.hpp"

namespace tensorhub::snapshot {
namespace {

using testing::empty_like;
using testing::make_tensor;
using testing::manifest_of;
using testing::OwnedTensor;
using testing::TempDir;
using testing::views;

// Opens a snapshot read-write to damage it.
class Tamper {
 public:
  explicit Tamper(const std::string& path) : file_(H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT)) {
    EXPECT_GE(file_, 0) << path;
  }
  ~Tamper() { H5Fclose(file_); }
  Tamper(const Tamper&) = delete;
  Tamper& operator=(const Tamper&) = delete;

  void set_u32(const char* object, const char* name, std::uint32_t v) {
    replace_attr(object, name, H5T_STD_U32LE, H5T_NATIVE_UINT32, &v, 0);
  }
  // A fixed-size string, as format 2 writes them.
  void set_string(const char* object, const char* name, const std::string& v) {
    const hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, std::max<std::size_t>(v.size(), 1));
    H5Tset_strpad(t, H5T_STR_NULLPAD);
    std::string buf = v;
    buf.resize(std::max<std::size_t>(v.size(), 1), '\0');
    replace_attr(object, name, t, t, buf.data(), 0);
    H5Tclose(t);
  }
  // A variable-length string, as format 1 wrote them.
  void set_vl_string(const char* object, const char* name, const std::string& v) {
    const hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, H5T_VARIABLE);
    const char* p = v.c_str();
    replace_attr(object, name, t, t, &p, 0);
    H5Tclose(t);
  }
  void set_u64_array(const char* object, const char* name, const std::vector<std::uint64_t>& v) {
    replace_attr(object, name, H5T_STD_U64LE, H5T_NATIVE_UINT64, v.data(), v.size());
  }
  void delete_attr(const char* object, const char* name) {
    EXPECT_GE(H5Adelete_by_name(file_, object, name, H5P_DEFAULT), 0) << name;
  }
  void delete_link(const char* path) { EXPECT_GE(H5Ldelete(file_, path, H5P_DEFAULT), 0) << path; }
  // Replaces a dataset by an unwritten one of another type or shape.
  void replace_dataset(const char* path, hid_t type, const std::vector<hsize_t>& dims) {
    delete_link(path);
    const hid_t space = H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr);
    const hid_t ds = H5Dcreate2(file_, path, type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    EXPECT_GE(ds, 0) << path;
    H5Dclose(ds);
    H5Sclose(space);
  }

 private:
  // n == 0: scalar.
  void replace_attr(const char* object, const char* name, hid_t ftype, hid_t mtype, const void* data, hsize_t n) {
    if (H5Aexists_by_name(file_, object, name, H5P_DEFAULT) > 0) delete_attr(object, name);
    const hid_t space = n == 0 ? H5Screate(H5S_SCALAR) : H5Screate_simple(1, &n, nullptr);
    const hid_t a = H5Acreate_by_name(file_, object, name, ftype, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    EXPECT_GE(a, 0) << name;
    EXPECT_GE(H5Awrite(a, mtype, data), 0) << name;
    H5Aclose(a);
    H5Sclose(space);
  }
  hid_t file_;
};

class SnapshotErrors : public ::testing::Test {
 protected:
  void SetUp() override {
    owned_.push_back(make_tensor("w", DType::kF32, {64, 64}, 1));  // 4 chunks
    owned_.push_back(make_tensor("emb", DType::kBF16, {10, 300}, 2));
    owned_.push_back(make_tensor("b", DType::kI64, {100}, 3));
    tensors_ = views(owned_);
    manifest_ = manifest_of("policy", 7, 4096, {tensors_});
    path_ = dir_.file("v7.h5");
    write(path_, manifest_, tensors_);
  }

  // `fn` throws E whose message names the file and contains every needle.
  template <class E = SnapshotError, class Fn>
  void expect_error(Fn&& fn, const std::vector<std::string>& needles) {
    try {
      fn();
      ADD_FAILURE() << "no exception; expected one mentioning " << ::testing::PrintToString(needles);
    } catch (const E& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(path_), std::string::npos) << what;
      for (const auto& n : needles) EXPECT_NE(what.find(n), std::string::npos) << "'" << n << "' not in: " << what;
    }
  }

  // inspect, read (of every tensor) and verify all fail with needles.
  void expect_all_fail(const std::vector<std::string>& needles) {
    expect_error([&] { inspect(path_); }, needles);
    expect_error([&] { read_all(); }, needles);
    expect_error([&] { verify(path_); }, needles);
  }

  std::vector<OwnedTensor> read_all(bool check = true) {
    std::vector<OwnedTensor> back;
    for (const auto& t : tensors_) back.push_back(empty_like(t));
    read(path_, views(back), check);
    return back;
  }

  TempDir dir_;
  std::vector<OwnedTensor> owned_;
  std::vector<Tensor> tensors_;
  Manifest manifest_;
  std::string path_;
};

TEST_F(SnapshotErrors, MissingFileDirectoryAndNonHdf5File) {
  path_ = dir_.file("missing.h5");
  expect_all_fail({"no such file"});
  path_ = dir_.path().string();
  expect_all_fail({"not a regular file"});
  path_ = dir_.file("text.h5");
  testing::spit(path_, std::vector<unsigned char>(10000, 'x'));
  expect_all_fail({"not an HDF5 file"});
  testing::spit(path_, {});
  expect_all_fail({"not an HDF5 file"});
}

TEST_F(SnapshotErrors, TruncatedFile) {
  const auto size = std::filesystem::file_size(path_);
  std::filesystem::resize_file(path_, size / 2);
  expect_all_fail({"cannot open the HDF5 file", "truncated"});
}

TEST_F(SnapshotErrors, FlippedDataBytes) {
  auto bytes = testing::slurp(path_);
  const auto at = testing::find_bytes(bytes, owned_[0].bytes.data(), 64);
  ASSERT_NE(at, std::string::npos);
  bytes[at + 2 * 4096 + 10] ^= 0x01;  // chunk 2 of w
  bytes[at + 3 * 4096 + 1] ^= 0x80;   // chunk 3 of w
  testing::spit(path_, bytes);

  EXPECT_NO_THROW(inspect(path_));  // structure is intact
  expect_error<ChecksumError>([&] { read_all(); }, {"tensor 'w' chunk 2 (bytes 8192..12288)", "!= manifest 0x"});
  const VerifyReport report = verify(path_);
  EXPECT_FALSE(report.ok());
  ASSERT_EQ(report.mismatches.size(), 2u);
  EXPECT_NE(report.mismatches[0].find("tensor 'w' chunk 2"), std::string::npos) << report.mismatches[0];
  EXPECT_NE(report.mismatches[1].find("tensor 'w' chunk 3"), std::string::npos) << report.mismatches[1];
  EXPECT_EQ(report.chunks, manifest_.chunks.size());

  // Undamaged tensors still read; without verification the damaged one reads as stored.
  auto emb = empty_like(tensors_[1]);
  read(path_, std::vector<Tensor>{emb.tensor});
  EXPECT_EQ(emb.bytes, owned_[1].bytes);
  EXPECT_NO_THROW(read_all(/*check=*/false));
}

TEST_F(SnapshotErrors, WrongFormatVersion) {
  Tamper(path_).set_u32("/", "tensorhub_format_version", 4);
  expect_all_fail({"format version 4, this build reads 1 to 3"});
  Tamper(path_).set_u32("/", "tensorhub_format_version", 0);
  expect_all_fail({"format version 0, this build reads 1 to 3"});
}

// Formats 1 and 2 store XXH64 sums only: a format-2 header over an XXH3 manifest is refused.
TEST_F(SnapshotErrors, Format2WithXxh3SumsIsRefused) {
  Tamper(path_).set_u32("/", "tensorhub_format_version", 2);
  expect_all_fail({"format version 2 stores XXH64 sums", "xxh3_64"});
}

// Issue 16: HDF5 1.10.8 crashed reading damaged variable-length string attributes. Format 2
// stores none, and a format-2 file that has one is refused before HDF5 reads it.
TEST_F(SnapshotErrors, VariableLengthStringsAreRefusedInFormat2) {
  Tamper(path_).set_vl_string("/", "model", "policy");
  expect_all_fail({"attribute 'model' of /", "variable-length string"});
}

TEST_F(SnapshotErrors, NoHeader) {
  Tamper(path_).delete_attr("/", "tensorhub_format_version");
  expect_all_fail({"not a TensorHub snapshot", "tensorhub_format_version"});
}

TEST_F(SnapshotErrors, FormatVersionOfTheWrongType) {
  Tamper(path_).set_string("/", "tensorhub_format_version", "1");
  expect_all_fail({"attribute 'tensorhub_format_version' of /", "not an integer"});
}

TEST_F(SnapshotErrors, GarbageManifest) {
  Tamper(path_).set_string("/", "manifest", "{\"format\": 1, \"tensors\": [ garbage");
  expect_all_fail({"root attribute 'manifest'", "malformed manifest JSON"});
  Tamper(path_).set_string("/", "manifest", "[]");
  expect_all_fail({"root attribute 'manifest'", "not an object"});
  Tamper(path_).delete_attr("/", "manifest");
  expect_all_fail({"root attribute 'manifest' is missing"});
}

TEST_F(SnapshotErrors, HeaderDisagreesWithManifest) {
  Tamper(path_).set_string("/", "model", "value");
  expect_all_fail({"root attribute 'model' is 'value' but the manifest says 'policy'"});
  Tamper(path_).set_string("/", "model", "policy");
  Tamper(path_).set_u32("/", "version", 8);
  expect_all_fail({"root attribute 'version' is 8 but the manifest says 7"});
}

TEST_F(SnapshotErrors, MissingDatasetAndGroup) {
  Tamper(path_).delete_link("/tensors/w");
  expect_all_fail({"dataset /tensors/w (tensor 'w' of the manifest) is missing"});
  auto b = empty_like(tensors_[2]);  // reading other tensors still works
  read(path_, std::vector<Tensor>{b.tensor});
  EXPECT_EQ(b.bytes, owned_[2].bytes);
  Tamper(path_).delete_link("/tensors");
  expect_all_fail({"group /tensors is missing"});
}

TEST_F(SnapshotErrors, ShapeMismatch) {
  Tamper(path_).replace_dataset("/tensors/w", H5T_IEEE_F32LE, {32, 128});
  expect_all_fail({"dataset /tensors/w has shape [32,128] but the manifest says [64,64]"});
}

TEST_F(SnapshotErrors, DtypeMismatch) {
  Tamper(path_).replace_dataset("/tensors/w", H5T_STD_I32LE, {64, 64});
  expect_all_fail({"dataset /tensors/w has type 32-bit signed integer but the manifest says f32"});
}

TEST_F(SnapshotErrors, Bf16ReplacedByAnotherSixteenBitFloat) {
  const hid_t half = H5Tcopy(H5T_IEEE_F32LE);
  H5Tset_fields(half, 15, 10, 5, 0, 10);
  H5Tset_offset(half, 0);
  H5Tset_precision(half, 16);
  H5Tset_size(half, 2);
  H5Tset_ebias(half, 15);
  Tamper(path_).replace_dataset("/tensors/emb", half, {10, 300});
  H5Tclose(half);
  expect_all_fail({"dataset /tensors/emb has type 16-bit float (5 exponent, 10 mantissa bits)", "says bf16"});
}

TEST_F(SnapshotErrors, DatasetAttributesDisagree) {
  Tamper(path_).set_u64_array("/tensors/w", "tensorhub_chunk_xxh3_64", {1, 2, 3, 4});
  expect_all_fail({"dataset /tensors/w attribute 'tensorhub_chunk_xxh3_64' disagrees with the manifest at chunk 0"});
  Tamper(path_).set_u64_array("/tensors/w", "tensorhub_chunk_xxh3_64", std::vector<std::uint64_t>(5, 0));
  expect_all_fail({"attribute 'tensorhub_chunk_xxh3_64' of /tensors/w", "5 elements"});
  Tamper(path_).delete_attr("/tensors/w", "tensorhub_chunk_xxh3_64");
  expect_all_fail({"dataset /tensors/w has no attribute 'tensorhub_chunk_xxh3_64'"});
}

TEST_F(SnapshotErrors, DtypeAttributeDisagrees) {
  Tamper(path_).set_string("/tensors/b", "tensorhub_dtype", "f64");
  expect_error([&] { inspect(path_); }, {"dataset /tensors/b has dtype attribute 'f64' but the manifest says i64"});
}

TEST_F(SnapshotErrors, BadReadRequests) {
  auto stranger = make_tensor("zzz", DType::kF32, {4}, 1);
  expect_error([&] { read(path_, std::vector<Tensor>{stranger.tensor}); }, {"has no tensor 'zzz'"});
  auto wrong = make_tensor("w", DType::kF32, {4096}, 1);
  expect_error([&] { read(path_, std::vector<Tensor>{wrong.tensor}); }, {"f32[64,64]", "f32[4096]"});
  auto shortbuf = empty_like(tensors_[0]);
  shortbuf.tensor.bytes -= 1;
  expect_error([&] { read(path_, std::vector<Tensor>{shortbuf.tensor}); }, {"needs 16384 bytes"});
  auto w = empty_like(tensors_[0]);
  expect_error([&] { read(path_, std::vector<Tensor>{w.tensor, w.tensor}); }, {"requested twice"});
}

}  // namespace
}  // namespace tensorhub::snapshot
