// lib/transport mpi_rma pool.hpp: allocate() touches every page of a block that no earlier
// block touched (first touch), once: a block reused after deallocate touches nothing, a block in
// a gap that was never handed out touches its own pages.
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>

#include "mpi_rma/pool.hpp"

namespace tensorhub::transport {
namespace {

constexpr std::uint64_t kPage = 4096;

struct Region {
  std::unique_ptr<void, decltype(&std::free)> memory{std::aligned_alloc(kPage, 64 * kPage), &std::free};
};

TEST(MpiRmaPool, AllocateTouchesEachNewPageOnce) {
  Region r;
  Pool pool(r.memory.get(), 64 * kPage);
  EXPECT_EQ(pool.touched_pages(), 0u);
  void* a = pool.allocate(3 * kPage + 1);  // 4 pages
  EXPECT_EQ(pool.touched_pages(), 4u);
  void* b = pool.allocate(kPage);
  EXPECT_EQ(pool.touched_pages(), 5u);
  pool.deallocate(a);
  void* c = pool.allocate(2 * kPage);  // reuses pages of a: nothing new
  EXPECT_EQ(c, a);
  EXPECT_EQ(pool.touched_pages(), 5u);
  void* d = pool.allocate(10 * kPage);  // past b: 10 new pages
  EXPECT_EQ(pool.touched_pages(), 15u);
  void* e = pool.allocate(2 * kPage);  // the rest of a's block, touched already
  EXPECT_EQ(pool.touched_pages(), 15u);
  for (void* p : {b, c, d, e}) pool.deallocate(p);
  (void)pool.allocate(64 * kPage);  // the whole region: the untouched tail only
  EXPECT_EQ(pool.touched_pages(), 64u);
}

}  // namespace
}  // namespace tensorhub::transport
