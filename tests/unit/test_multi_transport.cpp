// The multi transport (lib/transport/multi) over fake paths: the path-list encoding and its
// validation, routing per (reader, holder) pair, regions exposed on only some paths, the
// no-path error, and shared exposures of one range.
#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "multi/multi_transport.hpp"
#include "multi/path_list.hpp"
#include "multi_test_path.hpp"
#include "tensorhub/core/error.hpp"
#include "tensorhub/core/limits.hpp"

namespace tensorhub::test {
namespace {

using transport::MultiTransport;
using transport::multi::decode_path_list;
using transport::multi::encode_path_list;
using transport::multi::PathList;

constexpr std::size_t kMax = limits::kMaxEndpointBytes;

TEST(PathList, RoundTrip) {
  const PathList list{{"mpi_rma", "mpi_rma:job:3"}, {"ucx", std::string("ucx:h/1:a;b=c:\0d", 16)}, {"x", ""}};
  const auto text = encode_path_list(list, kMax);
  const auto back = decode_path_list(text, kMax, "endpoint");
  ASSERT_EQ(back.size(), list.size());
  for (std::size_t i = 0; i < list.size(); ++i) {
    EXPECT_EQ(back[i].name, list[i].name);
    EXPECT_EQ(back[i].value, list[i].value);
  }
  EXPECT_EQ(transport::multi::path_names(back), "mpi_rma, ucx, x");
}

TEST(PathList, EncodeRefusesBadLists) {
  EXPECT_THROW(encode_path_list({}, kMax), TransportError);
  EXPECT_THROW(encode_path_list({{"Bad", "x"}}, kMax), TransportError);
  EXPECT_THROW(encode_path_list({{"a", "x"}, {"a", "y"}}, kMax), TransportError);
  EXPECT_THROW(encode_path_list({{"a", std::string(100, 'x')}}, 50), TransportError);
  PathList many;
  for (int i = 0; i < 9; ++i) many.push_back({"p" + std::to_string(i), "e"});
  EXPECT_THROW(encode_path_list(many, kMax), TransportError);
}

TEST(PathList, DecodeRefusesMalformedInput) {
  const std::vector<std::string> bad = {
      "",                                  // nothing
      "ucx:host:abc",                      // not a path list
      "paths1;",                           // no path
      "paths2;a=1:x;",                     // another format version
      "paths1;a=1:x",                      // no terminator
      "paths1;a=2:x;",                     // cut short
      "paths1;a=0:;a=0:;",                 // duplicate
      "paths1;A=1:x;",                     // bad name
      "paths1;=1:x;",                      // empty name
      "paths1;a=:x;",                      // no length
      "paths1;a=-1:x;",                    // negative length
      "paths1;a=99999999999999999999:x;",  // overflowing length
      "paths1;a1:x;",                      // no '='
      "paths1;a=1:xx;",                    // trailing bytes in the value
      "paths1;a=1:x;junk",                 // trailing junk
  };
  for (const auto& text : bad) EXPECT_THROW(decode_path_list(text, kMax, "endpoint"), TransportError) << text;
  std::string many = "paths1;";
  for (int i = 0; i < 9; ++i) many += "p" + std::to_string(i) + "=0:;";
  EXPECT_THROW(decode_path_list(many, kMax, "endpoint"), TransportError);
  EXPECT_THROW(decode_path_list("paths1;a=1:x;", 5, "endpoint"), TransportError) << "longer than the limit";
  try {
    decode_path_list("paths1;a=5:x;", kMax, "region descriptor");
    FAIL();
  } catch (const TransportError& e) {
    EXPECT_NE(std::string(e.what()).find("region descriptor"), std::string::npos) << e.what();
  }
}

// A process with a "job" path (reaches its own group only) and an "any" path (reaches all).
struct Process {
  std::shared_ptr<PathCounters> job = std::make_shared<PathCounters>();
  std::shared_ptr<PathCounters> any = std::make_shared<PathCounters>();
  std::unique_ptr<MultiTransport> t;

  Process(const std::string& group, const std::string& id, bool with_any = true, const unsigned char* pool = nullptr,
          std::uint64_t pool_bytes = 0) {
    std::vector<std::unique_ptr<transport::Transport>> paths;
    paths.push_back(std::make_unique<FakePath>("job", group, id, job, pool, pool_bytes));
    if (with_any) paths.push_back(std::make_unique<FakePath>("any", "all", id, any));
    t = std::make_unique<MultiTransport>(std::move(paths));
  }
};

std::vector<unsigned char> pattern(std::size_t n, unsigned char seed) {
  std::vector<unsigned char> v(n);
  std::iota(v.begin(), v.end(), seed);
  return v;
}

// Reads all of `region` of `holder` into a fresh buffer through `reader`.
std::vector<unsigned char> read_all(MultiTransport& reader, const MultiTransport& holder, const std::string& region,
                                    std::size_t n) {
  std::vector<unsigned char> dst(n);
  reader.post(transport::ReadOp{holder.endpoint(), region, 0, dst.data(), n, 7});
  std::vector<transport::Completion> done;
  reader.poll(done);
  EXPECT_EQ(done.size(), 1u);
  if (!done.empty()) {
    EXPECT_EQ(done[0].tag, 7u);
    EXPECT_TRUE(done[0].ok);
  }
  return dst;
}

TEST(MultiTransport, NameAndEndpointListEveryPath) {
  Process p("A", "0");
  EXPECT_EQ(p.t->name(), "job+any");
  const auto list = decode_path_list(p.t->endpoint(), kMax, "endpoint");
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[0].value, "job:A:0");
  EXPECT_EQ(list[1].value, "any:all:0");
}

TEST(MultiTransport, RoutesEachPairOverTheBestPathThatReaches) {
  Process reader("A", "r");
  Process same_job("A", "h1");
  Process other_job("B", "h2");
  const auto src = pattern(4096, 1);
  const transport::MemoryRange range{const_cast<unsigned char*>(src.data()), src.size()};
  auto e1 = same_job.t->expose({&range, 1});
  auto e2 = other_job.t->expose({&range, 1});
  EXPECT_TRUE(reader.t->reaches(same_job.t->endpoint()));
  EXPECT_TRUE(reader.t->reaches(other_job.t->endpoint()));

  EXPECT_EQ(read_all(*reader.t, *same_job.t, e1->descriptors()[0], src.size()), src);
  EXPECT_EQ(reader.job->posts, 1);
  EXPECT_EQ(reader.any->posts, 0) << "the same job reads over its own path";

  EXPECT_EQ(read_all(*reader.t, *other_job.t, e2->descriptors()[0], src.size()), src);
  EXPECT_EQ(reader.job->posts, 1);
  EXPECT_EQ(reader.any->posts, 1) << "another job's holder is read over the path that reaches it";
}

// can_scatter answers for the path post() would choose: the same job's path scatters, the path
// to another job's holder does not; nor does anything for a holder no path reaches.
TEST(MultiTransport, CanScatterAnswersForThePathAReadWouldTake) {
  Process reader("A", "r");
  Process same_job("A", "h1");
  Process other_job("B", "h2");
  const auto src = pattern(4096, 3);
  const transport::MemoryRange range{const_cast<unsigned char*>(src.data()), src.size()};
  auto e1 = same_job.t->expose({&range, 1});
  auto e2 = other_job.t->expose({&range, 1});
  EXPECT_TRUE(reader.t->can_scatter(same_job.t->endpoint(), e1->descriptors()[0]));
  EXPECT_FALSE(reader.t->can_scatter(other_job.t->endpoint(), e2->descriptors()[0]));
  EXPECT_FALSE(reader.t->can_scatter("nowhere:x:0", e1->descriptors()[0])) << "no path reaches it";
}

TEST(MultiTransport, MemoryOutsideAPoolIsExposedOnTheOtherPaths) {
  std::vector<unsigned char> pool(8192);
  Process reader("A", "r", true, pool.data(), pool.size());
  Process holder("A", "h", true, pool.data(), pool.size());
  const auto own = pattern(1000, 9);  // the trainer's own memory, not from the pool
  std::copy(own.begin(), own.end(), pool.begin());
  const std::vector<transport::MemoryRange> ranges{{const_cast<unsigned char*>(own.data()), own.size()},
                                                   {pool.data(), own.size()}};
  auto e = holder.t->expose(ranges);
  ASSERT_EQ(e->descriptors().size(), 2u);
  EXPECT_EQ(transport::multi::path_names(decode_path_list(e->descriptors()[0], kMax, "d")), "any");
  EXPECT_EQ(transport::multi::path_names(decode_path_list(e->descriptors()[1], kMax, "d")), "job, any");
  EXPECT_EQ(read_all(*reader.t, *holder.t, e->descriptors()[0], own.size()), own);
  EXPECT_EQ(reader.any->posts, 1) << "own memory: the pool path has no descriptor for it";
  EXPECT_EQ(read_all(*reader.t, *holder.t, e->descriptors()[1], own.size()), own);
  EXPECT_EQ(reader.job->posts, 1) << "pool memory: the best path";
}

TEST(MultiTransport, NoCommonPathSaysWhatEachSideHas) {
  Process reader("A", "r", /*with_any=*/false);
  Process holder("B", "h");
  const auto src = pattern(64, 3);
  const transport::MemoryRange range{const_cast<unsigned char*>(src.data()), src.size()};
  auto e = holder.t->expose({&range, 1});
  EXPECT_FALSE(reader.t->reaches(holder.t->endpoint()));
  std::vector<unsigned char> dst(src.size());
  try {
    reader.t->post(transport::ReadOp{holder.t->endpoint(), e->descriptors()[0], 0, dst.data(), dst.size(), 1});
    FAIL() << "no path should reach";
  } catch (const TransportError& err) {
    const std::string what = err.what();
    EXPECT_NE(what.find("the holder offers job, any"), std::string::npos) << what;
    EXPECT_NE(what.find("this reader has job"), std::string::npos) << what;
  }
  EXPECT_EQ(reader.t->in_flight(), 0u);
  // Garbage from the network is refused the same way, and never reaches a backend.
  EXPECT_FALSE(reader.t->reaches("paths1;job=999:x;"));
  EXPECT_THROW(reader.t->post(transport::ReadOp{"paths1;job=3:x", "d", 0, dst.data(), 1, 2}), TransportError);
  EXPECT_THROW(reader.t->post(transport::ReadOp{reader.t->endpoint(), "paths1;job=9:1;", 0, dst.data(), 1, 3}),
               TransportError);
  EXPECT_EQ(reader.job->posts, 0);
}

TEST(MultiTransport, AnEmptyRegionDescriptorIsACallersBugNotABackendsError) {
  // A read with no region descriptor (a source record that lost its regions) is refused where it
  // is posted, by name, before any backend parses it and blames the holder.
  Process reader("A", "r");
  Process holder("A", "h");
  std::vector<unsigned char> dst(8);
  try {
    reader.t->post(transport::ReadOp{holder.t->endpoint(), "", 0, dst.data(), dst.size(), 1});
    FAIL() << "an empty descriptor must be refused";
  } catch (const ContractViolation& e) {
    EXPECT_NE(std::string(e.what()).find("empty region descriptor"), std::string::npos) << e.what();
  }
  EXPECT_EQ(reader.job->posts + reader.any->posts, 0);
  EXPECT_EQ(reader.t->in_flight(), 0u);
}

TEST(MultiTransport, ReadsSingleBackendEndpoints) {
  Process reader("A", "r");
  const auto src = pattern(32, 5);
  std::vector<unsigned char> dst(src.size());
  reader.t->post(transport::ReadOp{"any:all:legacy", transport::encode_region(src.data(), src.size()), 0, dst.data(),
                                   dst.size(), 4});
  std::vector<transport::Completion> done;
  reader.t->poll(done);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(dst, src);
}

TEST(MultiTransport, OneRangeExposedTwiceSharesOneRegistration) {
  Process holder("A", "h");
  Process reader("A", "r");
  const auto src = pattern(256, 7);
  const transport::MemoryRange range{const_cast<unsigned char*>(src.data()), src.size()};
  auto v1 = holder.t->expose({&range, 1});
  auto v2 = holder.t->expose({&range, 1});
  EXPECT_EQ(v1->descriptors(), v2->descriptors());
  EXPECT_EQ(holder.job->exposes, 1);
  EXPECT_EQ(holder.any->exposes, 1);
  v1.reset();  // "unpublish" of one version
  EXPECT_EQ(holder.job->live_exposures, 1) << "the other version still holds the registration";
  EXPECT_EQ(read_all(*reader.t, *holder.t, v2->descriptors()[0], src.size()), src);
  v2.reset();
  EXPECT_EQ(holder.job->live_exposures, 0);
  EXPECT_EQ(holder.any->live_exposures, 0);
  auto v3 = holder.t->expose({&range, 1});
  EXPECT_EQ(holder.job->exposes, 2) << "exposed again once nothing held it";
}

TEST(MultiTransport, MemoryNoPathCanExposeIsAUserError) {
  std::vector<unsigned char> pool(64);
  Process holder("A", "h", /*with_any=*/false, pool.data(), pool.size());
  std::vector<unsigned char> own(16);
  const transport::MemoryRange range{own.data(), own.size()};
  EXPECT_FALSE(holder.t->can_expose(range));
  EXPECT_THROW(holder.t->expose({&range, 1}), UserError);
  EXPECT_EQ(holder.job->exposes, 0);
}

}  // namespace
}  // namespace tensorhub::test
