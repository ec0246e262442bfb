// Retention -> snapshot over MPI (4 ranks: 0 coordinator and retainer, 1 and 2 a two-rank
// publishing group, 3 a reader).
//  * Both publishers unpublish a retained version at the same time with a snapshot directory:
//    exactly one of them writes <dir>/<model>/v<version>.h5, status shows the file, and the
//    reader then gets verified bytes from the file alone.
//  * Without a snapshot directory the last holder's unpublish throws OffloadRequired and
//    leaves the version intact. Leaving (close) offloads like unpublish.
//  * A fresh hub (new coordinator, nothing published) re-seeds the version from the file with
//    Hub::attach_snapshot and serves it (recover); once the file is gone, a pull says so.
#include <gtest/gtest.h>
#include <mpi.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "pattern.hpp"
#include "tensorhub/hub.hpp"
#include "tensorhub/mpi/mpi.hpp"

namespace tensorhub {
namespace {

namespace fs = std::filesystem;
using test::Buffers;

constexpr std::uint64_t kTensorBytes = (3 << 20) + 4096;  // with a 1 MiB chunk: 4 chunks, the last partial
constexpr std::size_t kTensors = 2;                       // per publisher

int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

// One temporary directory for the whole run, made by rank 0 and removed at exit.
const std::string& temp_dir() {
  static const std::string dir = [] {
    std::string mine;
    if (world_rank() == 0) {
      std::string templ = (fs::temp_directory_path() / "tensorhub-retention-XXXXXX").string();
      if (mkdtemp(templ.data()) == nullptr) std::abort();
      mine = templ;
    }
    return mpi::bcast_string(MPI_COMM_WORLD, 0, mine);
  }();
  return dir;
}

HubOptions options(std::string snapshot_dir) {
  HubOptions o;
  o.pool_bytes = 64ull << 20;
  o.chunk_bytes = 1ull << 20;
  o.snapshot_dir = std::move(snapshot_dir);
  return o;
}

PullOptions no_relay() {
  PullOptions o;
  o.relay = false;
  return o;
}

// Ranks 1 and 2 as the publishing group "trainer" (collective over the world).
MPI_Comm trainer_comm() {
  const int rank = world_rank();
  MPI_Comm comm = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, rank == 1 || rank == 2 ? 0 : MPI_UNDEFINED, rank, &comm);
  return comm;
}

// Shard of publisher rank 1: "a0", "a1"; of rank 2: "b0", "b1". Filled with `version`'s pattern.
std::string prefix_of(int rank) { return rank == 1 ? "a" : "b"; }

const VersionInfo* find_version(const std::vector<ModelInfo>& st, const std::string& model, std::uint64_t v) {
  for (const auto& m : st) {
    if (m.model != model) continue;
    for (const auto& vi : m.versions) {
      if (vi.version == v) return &vi;
    }
  }
  return nullptr;
}

std::vector<std::string> files_under(const fs::path& dir) {
  std::vector<std::string> out;
  if (!fs::exists(dir)) return out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (e.is_regular_file()) out.push_back(fs::relative(e.path(), dir).string());
  }
  return out;
}

TEST(Retention, ConcurrentUnpublishOffloadsOnceAndReaderReadsTheFile) {
  const int rank = world_rank();
  const std::string dir = temp_dir() + "/offload";
  auto hub = Hub::join(MPI_COMM_WORLD, options(dir));
  MPI_Comm trainer = trainer_comm();
  const bool publisher = trainer != MPI_COMM_NULL;

  std::unique_ptr<Buffers> shard;
  if (publisher) {
    shard = std::make_unique<Buffers>(*hub, kTensors, kTensorBytes, prefix_of(rank));
    shard->fill(rank);  // distinct content per shard (pattern of "version" = rank)
    hub->publish("ret", 1, shard->tensors, Group::of(trainer, "trainer"));
  }
  mpi::sleepy_barrier(MPI_COMM_WORLD);
  if (rank == 0) {
    ASSERT_EQ(hub->latest("ret"), 1u);
    hub->retain("ret", 1);
  }
  mpi::sleepy_barrier(MPI_COMM_WORLD);

  if (publisher) {
    // Both ranks of the group leave at once; neither may return before the file exists.
    MPI_Barrier(trainer);
    hub->unpublish("ret", 1);
    const fs::path file = fs::path(dir) / "ret" / "v1.h5";
    EXPECT_TRUE(fs::exists(file)) << "unpublish returned before the snapshot was written";
    // The memory is ours again: scribble over it, the file must not care.
    shard->fill(99);
  }
  mpi::sleepy_barrier(MPI_COMM_WORLD);

  if (rank == 0) {
    EXPECT_EQ(files_under(dir), std::vector<std::string>{"ret/v1.h5"}) << "exactly one file, no leftovers";
    const auto st = hub->status();
    const auto* v = find_version(st, "ret", 1);
    ASSERT_NE(v, nullptr);
    EXPECT_EQ(v->snapshot, fs::absolute(fs::path(dir) / "ret" / "v1.h5").string());
    EXPECT_TRUE(v->readable);
    EXPECT_EQ(v->holders, 0u);
    EXPECT_EQ(v->retained, 1u);
    EXPECT_EQ(v->bytes, 2 * kTensors * kTensorBytes);
    EXPECT_EQ(hub->latest("ret"), 1u);
  }
  mpi::sleepy_barrier(MPI_COMM_WORLD);

  if (rank == 3) {
    Buffers a(*hub, kTensors, kTensorBytes, "a");
    Buffers b(*hub, kTensors, kTensorBytes, "b");
    std::vector<Tensor> all = a.tensors;
    all.insert(all.end(), b.tensors.begin(), b.tensors.end());
    const auto r = hub->pull("ret", Version::latest(), all);
    EXPECT_EQ(r.version, 1u);
    EXPECT_EQ(r.bytes, 2 * kTensors * kTensorBytes);
    EXPECT_EQ(r.file_bytes, r.bytes);
    EXPECT_EQ(r.origin_bytes + r.relay_bytes, 0u);
    EXPECT_EQ(a.mismatches(1), 0u);
    EXPECT_EQ(b.mismatches(2), 0u);
  }
  mpi::sleepy_barrier(MPI_COMM_WORLD);

  if (rank == 0) {
    // The reader relays what it read from the file: the version has a live holder again.
    const auto st = hub->status();
    const auto* v = find_version(st, "ret", 1);
    ASSERT_NE(v, nullptr);
    EXPECT_EQ(v->holders, 1u);
    ASSERT_EQ(v->holder_list.size(), 1u);
    EXPECT_EQ(v->holder_list[0].rank, 3);
    EXPECT_FALSE(v->holder_list[0].origin);
    EXPECT_EQ(v->holder_list[0].chunks_held, v->holder_list[0].chunks_total);
    hub->release("ret", 1);
  }
  mpi::sleepy_barrier(MPI_COMM_WORLD);
  if (trainer != MPI_COMM_NULL) MPI_Comm_free(&trainer);
  shard.reset();
  hub->close();
}

TEST(Retention, WithoutASnapshotDirTheLastHolderCannotUnpublish) {
  unsetenv("TENSORHUB_SNAPSHOT_DIR");
  const int rank = world_rank();
  auto hub = Hub::join(MPI_COMM_WORLD, options(""));
  Buffers b(*hub, 1, 8192);
  if (rank == 1) {
    b.fill(5);
    hub->publish("keep", 5, b.tensors);
  }
  mpi::sleepy_barrier(MPI_COMM_WORLD);
  if (rank == 0) hub->retain("keep", 5);
  mpi::sleepy_barrier(MPI_COMM_WORLD);
  if (rank == 1) {
    try {
      hub->unpublish("keep", 5);
      ADD_FAILURE() << "unpublish of the last holder of a retained version succeeded";
    } catch (const OffloadRequired& e) {
      EXPECT_NE(std::string(e.what()).find("TENSORHUB_SNAPSHOT_DIR"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("release()"), std::string::npos) << e.what();
    }
  }
  mpi::sleepy_barrier(MPI_COMM_WORLD);
  if (rank == 3) {
    // Still published and readable from its holder.
    Buffers into(*hub, 1, 8192);
    EXPECT_EQ(hub->pull("keep", Version::exact(5), into.tensors, no_relay()).origin_bytes, 8192u);
    EXPECT_EQ(into.mismatches(5), 0u);
  }
  mpi::sleepy_barrier(MPI_COMM_WORLD);
  if (rank == 0) hub->release("keep", 5);
  mpi::sleepy_barrier(MPI_COMM_WORLD);
  if (rank == 1) hub->unpublish("keep", 5);
  hub->close();
}

TEST(Retention, LeavingCleanlyOffloadsLikeUnpublish) {
  const int rank = world_rank();
  const std::string dir = temp_dir() + "/close";
  auto hub = Hub::join(MPI_COMM_WORLD, options(dir));
  Buffers b(*hub, 1, kTensorBytes);
  if (rank == 1) {
    b.fill(3);
    hub->publish("left", 3, b.tensors);
  }
  mpi::sleepy_barrier(MPI_COMM_WORLD);
  if (rank == 0) hub->retain("left", 3);
  mpi::sleepy_barrier(MPI_COMM_WORLD);
  hub->close();  // rank 1 still publishes v3: close offloads it before leaving
  if (rank == 0) {
    EXPECT_EQ(files_under(dir), std::vector<std::string>{"left/v3.h5"});
  }
}

TEST(Retention, RecoverReseedsAVersionFromItsSnapshot) {
  const int rank = world_rank();
  const std::string file = fs::absolute(fs::path(temp_dir()) / "offload" / "ret" / "v1.h5").string();
  // A fresh hub: new coordinator, no version known.
  auto hub = Hub::join(MPI_COMM_WORLD, options(""));
  if (rank == 0) {
    ASSERT_TRUE(fs::exists(file)) << "the first test did not leave its snapshot";
    EXPECT_EQ(hub->latest("ret"), std::nullopt);
    hub->attach_snapshot(file);
    EXPECT_EQ(hub->latest("ret"), 1u);
    const auto st = hub->status();
    const auto* v = find_version(st, "ret", 1);
    ASSERT_NE(v, nullptr);
    EXPECT_EQ(v->snapshot, file);
    EXPECT_EQ(v->retained, 1u);
    EXPECT_EQ(v->holders, 0u);
  }
  mpi::sleepy_barrier(MPI_COMM_WORLD);
  if (rank == 2) {
    // A subset of the tensors, straight from the file.
    Buffers b(*hub, kTensors, kTensorBytes, "b");
    const auto r = hub->pull("ret", Version::exact(1), b.tensors, no_relay());
    EXPECT_EQ(r.file_bytes, kTensors * kTensorBytes);
    EXPECT_EQ(b.mismatches(2), 0u);
  }
  mpi::sleepy_barrier(MPI_COMM_WORLD);
  if (rank == 0) fs::rename(file, file + ".moved");
  mpi::sleepy_barrier(MPI_COMM_WORLD);
  if (rank == 3) {
    // The file backing a version with no holder is gone: a clear error, not a hang.
    Buffers a(*hub, kTensors, kTensorBytes, "a");
    try {
      hub->pull("ret", Version::latest(), a.tensors, no_relay());
      ADD_FAILURE() << "pull succeeded without holders or file";
    } catch (const NotFoundError& e) {
      EXPECT_NE(std::string(e.what()).find("is gone"), std::string::npos) << e.what();
    }
  }
  mpi::sleepy_barrier(MPI_COMM_WORLD);
  if (rank == 0) fs::rename(file + ".moved", file);
  mpi::sleepy_barrier(MPI_COMM_WORLD);
  if (rank == 0) {
    hub->release("ret", 1);
    EXPECT_EQ(hub->latest("ret"), std::nullopt);  // released and no holder: dropped
    // A file that is gone is a clear error.
    EXPECT_THROW(hub->attach_snapshot(temp_dir() + "/nope.h5"), UserError);
  }
  mpi::sleepy_barrier(MPI_COMM_WORLD);
  hub->close();
  if (rank == 0) fs::remove_all(temp_dir());
}

}  // namespace
}  // namespace tensorhub
