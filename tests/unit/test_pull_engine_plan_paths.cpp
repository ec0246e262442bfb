// PlanReader keeps its reads in flight on both kinds of sources at once: those on the reader's
// host (PlanSource::same_host: NVLink, shared memory) and those off it (the reader's NIC), each
// on its lowest ready chunks. Lowest-ready-first over all sources would put every read on
// whichever class holds the lowest chunks and leave the other path idle (with rails a GPU's NIC
// would idle while it reads its neighbours' stripes).
#include "plan_engine_fixture.hpp"

namespace tensorhub::transfer {
namespace {

using namespace plan_test;

// The chunk a posted read asks for (every region here is the whole tensor).
std::uint32_t chunk_of(const transport::ReadOp& op) { return static_cast<std::uint32_t>(op.offset / kChunk); }

TEST_F(PullEnginePlan, ReadsInFlightAlternateBetweenOnHostAndOffHostSources) {
  std::copy(data_.begin(), data_.end(), relay_buf_.begin());  // the relay holds everything
  client_.on_plan = [&](const coord::PlanRequest&) {
    coord::PlanReply reply;
    auto near = source(kRelay, relay_region_);
    near.same_host = true;
    reply.sources = {near, source(kOrigin, origin_region_)};
    reply.steps = {coord::PlanStep{{0, kChunks / 2}, 0}, coord::PlanStep{{kChunks / 2, kChunks / 2}, 1}};
    return reply;
  };
  const auto stats = pull();
  EXPECT_EQ(out_, data_);
  EXPECT_TRUE(stats.planned);
  ASSERT_GE(reader_.posted.size(), 4u);
  // inflight = 4: the lowest chunk (0, on the host), then the off-host class (8), and so on.
  std::vector<std::uint32_t> first;
  for (std::size_t i = 0; i < 4; ++i) first.push_back(chunk_of(reader_.posted[i]));
  EXPECT_EQ(first, (std::vector<std::uint32_t>{0, 8, 1, 9}));
}

TEST_F(PullEnginePlan, OneClassAloneTakesEveryReadInFlight) {
  client_.on_plan = [&](const coord::PlanRequest& r) {
    auto near = source(kOrigin, origin_region_);
    near.same_host = true;
    return all_from(r, near);
  };
  pull();
  EXPECT_EQ(out_, data_);
  ASSERT_GE(reader_.posted.size(), 4u);
  for (std::uint32_t i = 0; i < 4; ++i) EXPECT_EQ(chunk_of(reader_.posted[i]), i);
}

}  // namespace
}  // namespace tensorhub::transfer
