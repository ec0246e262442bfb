// The multi transport with a real ucx path: a holder offers a pool-only "job" path (like
// mpi_rma) and ucx; a reader of another "job" reads everything over ucx, one of the same job
// reads pool memory over the job path and the holder's own memory over ucx.
#include <gtest/gtest.h>
#include <unistd.h>

#include <memory>
#include <numeric>
#include <vector>

#include "multi/multi_transport.hpp"
#include "multi_test_path.hpp"
#include "ucx/ucx_transport.hpp"

namespace tensorhub::transport {
namespace {

struct Side {
  std::shared_ptr<test::PathCounters> job = std::make_shared<test::PathCounters>();
  std::unique_ptr<MultiTransport> t;
  UcxTransport* ucx = nullptr;
  Side(const std::string& group, const std::string& id, std::vector<unsigned char>& pool) {
    UcxOptions o;
    o.label = id;
    auto u = std::make_unique<UcxTransport>(o);
    ucx = u.get();
    std::vector<std::unique_ptr<Transport>> paths;
    paths.push_back(std::make_unique<test::FakePath>("job", group, id, job, pool.data(), pool.size()));
    paths.push_back(std::move(u));
    t = std::make_unique<MultiTransport>(std::move(paths));
  }
};

void read(MultiTransport& reader, const MultiTransport& holder, const std::string& region, unsigned char* dst,
          std::size_t n) {
  reader.post(ReadOp{holder.endpoint(), region, 0, dst, n, 1});
  std::vector<Completion> done;
  while (done.empty()) {
    reader.poll(done);
    if (done.empty()) usleep(100);
  }
  ASSERT_TRUE(done[0].ok) << done[0].error;
}

TEST(MultiUcx, EachPairUsesThePathThatReachesAndHoldsTheRegion) {
  alarm(60);
  std::vector<unsigned char> pool(1 << 16);
  std::vector<unsigned char> own(1 << 16);
  std::iota(pool.begin(), pool.end(), 1);
  std::iota(own.begin(), own.end(), 7);
  Side holder("A", "holder", pool);
  Side same_job("A", "reader-a", pool);
  Side other_job("B", "reader-b", pool);
  const std::vector<MemoryRange> ranges{{pool.data(), pool.size()}, {own.data(), own.size()}};
  auto e = holder.t->expose(ranges);

  std::vector<unsigned char> dst(pool.size());
  read(*other_job.t, *holder.t, e->descriptors()[0], dst.data(), dst.size());
  EXPECT_EQ(dst, pool);
  EXPECT_EQ(other_job.job->posts, 0) << "another job reads the pool over ucx";
  read(*other_job.t, *holder.t, e->descriptors()[1], dst.data(), dst.size());
  EXPECT_EQ(dst, own);

  read(*same_job.t, *holder.t, e->descriptors()[0], dst.data(), dst.size());
  EXPECT_EQ(dst, pool);
  EXPECT_EQ(same_job.job->posts, 1) << "the same job reads the pool over its own path";
  read(*same_job.t, *holder.t, e->descriptors()[1], dst.data(), dst.size());
  EXPECT_EQ(dst, own);
  EXPECT_EQ(same_job.job->posts, 1) << "the holder's own memory is on ucx only";
  alarm(0);
}

}  // namespace
}  // namespace tensorhub::transport
