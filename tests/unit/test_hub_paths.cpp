// Hubs over multi transports (several data paths) in one process: a trainer's own memory (not a
// pool's) published and read over the path that can expose it, the error when a reader has no
// path to a region, and one buffer backing a tensor in two versions (frozen weights).
#include <gtest/gtest.h>

#include "hub_test_util.hpp"
#include "multi/multi_transport.hpp"
#include "multi_test_path.hpp"

namespace tensorhub::test {
namespace {

constexpr std::uint64_t kBytes = 2 * kChunk + 256;

// "job" (memory inside `pool` only, like mpi_rma) and, with `any`, "local" (any memory).
std::unique_ptr<transport::Transport> paths(const std::string& id, std::vector<unsigned char>& pool, bool any = true) {
  std::vector<std::unique_ptr<transport::Transport>> p;
  p.push_back(std::make_unique<FakePath>("job", "A", id, std::make_shared<PathCounters>(), pool.data(), pool.size()));
  if (any) p.push_back(std::make_unique<transport::LocalTransport>(id));
  return std::make_unique<transport::MultiTransport>(std::move(p));
}

class HubPaths : public LocalHubs {
 protected:
  std::vector<unsigned char> pool_ = std::vector<unsigned char>(4096);
};

TEST_F(HubPaths, OwnMemoryIsPublishedOnThePathsThatTakeIt) {
  auto& pub = add_hub_over(paths("pub", pool_));
  auto& reader = add_hub_over(paths("reader", pool_));
  Buffers src(2, kBytes);  // the trainer's memory, outside the pool
  src.fill(1);
  pub.publish("m", 1, src.tensors, std::nullopt);
  Buffers dst(2, kBytes);
  const auto r = reader.pull("m", Version::latest(), dst.tensors, {});
  EXPECT_EQ(r.bytes, 2 * kBytes);
  EXPECT_EQ(dst.mismatches(1), 0u);
}

TEST_F(HubPaths, NoPathToARegionSaysWhy) {
  auto& pub = add_hub_over(paths("pub", pool_));
  HubOptions o = small_chunks();
  o.pull_deadline = std::chrono::milliseconds(5000);
  auto& reader = add_hub_over(paths("reader", pool_, /*any=*/false), o);
  Buffers src(1, kBytes);
  src.fill(2);
  pub.publish("m", 2, src.tensors, std::nullopt);
  Buffers dst(1, kBytes);
  PullOptions po;
  po.relay = false;
  try {
    reader.pull("m", Version::latest(), dst.tensors, po);
    FAIL() << "the reader has no path to the trainer's own memory";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("'w0'"), std::string::npos) << what;
    EXPECT_NE(what.find("the holder offers job, local (this region on local)"), std::string::npos) << what;
    EXPECT_NE(what.find("this reader has job"), std::string::npos) << what;
  }
}

TEST_F(HubPaths, OneBufferBacksATensorInTwoVersions) {
  auto& pub = add_hub_over(paths("pub", pool_));
  auto& reader = add_hub_over(paths("reader", pool_));
  Buffers frozen(1, kBytes, "frozen");
  frozen.fill(1);
  Buffers v1(1, kBytes, "lora");
  Buffers v2(1, kBytes, "lora");
  v1.fill(1);
  v2.fill(2);
  pub.publish("m", 1, std::vector<Tensor>{frozen.tensors[0], v1.tensors[0]}, std::nullopt);
  pub.publish("m", 2, std::vector<Tensor>{frozen.tensors[0], v2.tensors[0]}, std::nullopt);

  // Part of a published buffer is still refused.
  auto part = frozen.tensors[0];
  part.spec.shape = {static_cast<std::int64_t>(kBytes / 8)};
  part.bytes = kBytes / 2;
  EXPECT_THROW(pub.publish("m", 3, {&part, 1}, std::nullopt), UserError);

  PullOptions po;
  po.relay = false;
  pub.unpublish("m", 1);
  Buffers f(1, kBytes, "frozen");
  Buffers l(1, kBytes, "lora");
  reader.pull("m", Version::exact(2), std::vector<Tensor>{f.tensors[0], l.tensors[0]}, po);
  EXPECT_EQ(f.mismatches(1), 0u) << "v2 stays readable after v1, which shares its buffer, is unpublished";
  EXPECT_EQ(l.mismatches_of(0, 2, 0), 0u);
  pub.unpublish("m", 2);
  EXPECT_FALSE(holder("m", 2, pub.worker()));
}

}  // namespace
}  // namespace tensorhub::test
