// lib/snapshot, parallel write over 3 ranks (MPI-IO): each rank owns some tensors (a bf16, a
// multi-dimensional f32, one tensor bigger than chunk_bytes with a chunk size that does not
// divide it, a scalar, a bool); every rank then inspects, reads and verifies the file. Both
// transfer modes. Errors: a tensor passed by two ranks or by none, data that changed after the
// manifest was computed on one rank, an existing file: every rank throws, no file is left.
#include <gtest/gtest.h>
#include <mpi.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "../snapshot/snapshot_test_util.hpp"
#include "tensorhub/mpi/mpi.hpp"
#include "tensorhub/snapshot/snapshot.hpp"
#include "write_options.hpp"

namespace tensorhub::snapshot {
namespace {

using testing::empty_like;
using testing::make_tensor;
using testing::OwnedTensor;
using testing::views;

constexpr std::uint64_t kChunk = 5000;  // does not divide big (133200 bytes) and splits i64s

// Every rank builds every shard's tensors (deterministic contents) and passes only its own.
std::vector<std::vector<OwnedTensor>> all_shards() {
  std::vector<std::vector<OwnedTensor>> s(3);
  s[0].push_back(make_tensor("layers.0.attn/q_proj", DType::kF32, {64, 96}, 1));
  s[0].push_back(make_tensor("embed.weight", DType::kBF16, {50, 70}, 2));
  s[1].push_back(make_tensor("big", DType::kF32, {300, 111}, 3));
  s[2].push_back(make_tensor("bias", DType::kI64, {13, 7}, 4));
  s[2].push_back(make_tensor("mask", DType::kBool, {9}, 5));
  s[2].push_back(make_tensor("temperature", DType::kF64, {}, 6));
  return s;
}

class SnapshotMpi : public ::testing::Test {
 protected:
  void SetUp() override {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    ASSERT_EQ(size_, 3) << "run with 3 ranks";
    if (rank_ == 0) dir_ = std::make_unique<testing::TempDir>();
    dir_path_ = mpi::bcast_string(MPI_COMM_WORLD, 0, dir_ ? dir_->path().string() : std::string());
    shards_ = all_shards();
    std::vector<std::vector<Tensor>> specs;
    for (const auto& s : shards_) specs.push_back(views(s));
    manifest_ = testing::manifest_of("policy", 11, kChunk, specs);
    mine_ = views(shards_[static_cast<std::size_t>(rank_)]);
  }
  void TearDown() override { MPI_Barrier(MPI_COMM_WORLD); }  // rank 0 removes the directory after

  std::string file(const std::string& name) const { return dir_path_ + "/" + name; }

  // Every rank reads every tensor back and verifies the file.
  void expect_readable(const std::string& path) {
    const SnapshotInfo info = inspect(path);
    EXPECT_EQ(info.manifest, manifest_);
    std::vector<OwnedTensor> back;
    std::vector<const OwnedTensor*> want;
    for (const auto& s : shards_) {
      for (const auto& t : s) {
        back.push_back(empty_like(t.tensor));
        want.push_back(&t);
      }
    }
    read(path, views(back));
    for (std::size_t i = 0; i < back.size(); ++i) EXPECT_EQ(back[i].bytes, want[i]->bytes) << want[i]->tensor.spec.name;
    const VerifyReport report = verify(path);
    EXPECT_TRUE(report.ok());
    EXPECT_EQ(report.chunks, manifest_.chunks.size());
  }

  template <class E, class Fn>
  void expect_error_everywhere(Fn&& fn, const std::vector<std::string>& needles) {
    try {
      fn();
      ADD_FAILURE() << "no exception";
    } catch (const E& e) {
      for (const auto& n : needles) EXPECT_NE(std::string(e.what()).find(n), std::string::npos) << e.what();
    }
  }

  int rank_ = 0;
  int size_ = 0;
  std::unique_ptr<testing::TempDir> dir_;
  std::string dir_path_;
  std::vector<std::vector<OwnedTensor>> shards_;
  Manifest manifest_;
  std::vector<Tensor> mine_;
};

TEST_F(SnapshotMpi, ParallelWriteThenEveryRankReadsAndVerifies) {
  const std::string path = file("v11.h5");
  std::uint64_t last_done = 0;
  std::uint64_t calls = 0;
  write(MPI_COMM_WORLD, path, manifest_, mine_, false, [&](std::uint64_t done, std::uint64_t total) {
    EXPECT_GT(done, last_done);
    EXPECT_LE(done, total);
    last_done = done;
    ++calls;
  });
  std::uint64_t mine_bytes = 0;
  std::uint64_t mine_chunks = 0;
  for (const auto& t : mine_) {
    mine_bytes += t.spec.bytes();
    mine_chunks += chunk_count(t.spec.bytes(), kChunk);
  }
  EXPECT_EQ(last_done, mine_bytes);
  EXPECT_EQ(calls, mine_chunks);
  EXPECT_TRUE(std::filesystem::exists(path));
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  expect_readable(path);
}

TEST_F(SnapshotMpi, CollectiveTransferModeWritesTheSameFile) {
  const std::string path = file("collective.h5");
  detail::WriteOptions opt;
  opt.transfer = detail::Transfer::kCollective;
  opt.piece_bytes = 2 * kChunk;  // several pieces per tensor, different counts per rank
  detail::write_parallel(MPI_COMM_WORLD, path, manifest_, mine_, false, {}, opt);
  expect_readable(path);
}

TEST_F(SnapshotMpi, TensorPassedByTwoRanksOrByNone) {
  const std::string path = file("dup.h5");
  auto local = mine_;
  if (rank_ == 0) local.push_back(shards_[2][0].tensor);  // "bias" also on rank 0
  if (rank_ == 2) local.erase(local.begin() + 1);         // nobody passes "mask"
  expect_error_everywhere<SnapshotError>(
      [&] { write(MPI_COMM_WORLD, path, manifest_, local); },
      {path, "exactly one rank", "'bias' by 2 ranks (e.g. 0 and 2)", "'mask' by no rank"});
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
}

TEST_F(SnapshotMpi, DataChangedOnOneRankFailsEveryRank) {
  const std::string path = file("changed.h5");
  if (rank_ == 1) shards_[1][0].bytes[4 * kChunk + 3] ^= 0x10;  // chunk 4 of "big"
  expect_error_everywhere<ChecksumError>([&] { write(MPI_COMM_WORLD, path, manifest_, mine_); },
                                         {"tensor 'big' chunk 4"});
  MPI_Barrier(MPI_COMM_WORLD);
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
}

TEST_F(SnapshotMpi, DifferentManifestsAndExistingFile) {
  const std::string path = file("exists.h5");
  Manifest other = manifest_;
  if (rank_ == 1)
    other = testing::manifest_of("policy", 12, kChunk, {views(shards_[0]), views(shards_[1]), views(shards_[2])});
  expect_error_everywhere<SnapshotError>([&] { write(MPI_COMM_WORLD, path, other, mine_); }, {"different manifests"});

  write(MPI_COMM_WORLD, path, manifest_, mine_);
  expect_error_everywhere<SnapshotError>([&] { write(MPI_COMM_WORLD, path, manifest_, mine_); },
                                         {path, "overwrite=true"});
  write(MPI_COMM_WORLD, path, manifest_, mine_, /*overwrite=*/true);
  expect_readable(path);
}

}  // namespace
}  // namespace tensorhub::snapshot
