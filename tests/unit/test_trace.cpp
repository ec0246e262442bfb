// TraceRecorder: valid Chrome trace-event JSON, bounded memory (dropped events counted), lane
// names, per-rank file names and merging.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>
#include <thread>
#include <vector>

#include "tensorhub/core/error.hpp"
#include "tensorhub/core/trace.hpp"

namespace tensorhub {
namespace {

TEST(Trace, SpansInstantsAndLaneNamesAreTraceEvents) {
  TraceRecorder r(3, "rank 3");
  const auto t0 = TraceRecorder::now();
  r.span("read", "chunk", TraceRecorder::kReadLane, t0, t0 + std::chrono::microseconds(250),
         {{"bytes", std::int64_t{4096}}, {"source", std::string("relay")}, {"gbps", 1.5}});
  r.instant("mark", "hub", TraceRecorder::kCallLane, t0);
  r.name_lane(TraceRecorder::kReadLane, "read slot 0");
  const auto j = nlohmann::json::parse(r.json());
  int spans = 0, meta = 0;
  for (const auto& e : j["traceEvents"]) {
    EXPECT_EQ(e["pid"], 3);
    if (e["ph"] == "M") ++meta;
    if (e["ph"] == "X") {
      ++spans;
      EXPECT_EQ(e["dur"], 250);
      EXPECT_EQ(e["args"]["bytes"], 4096);
      EXPECT_TRUE(e["args"]["bytes"].is_number_integer());
      EXPECT_EQ(e["args"]["source"], "relay");
    }
  }
  EXPECT_EQ(spans, 1);
  EXPECT_EQ(meta, 4);  // process name, calls, heartbeat, read slot 0
}

TEST(Trace, BoundedFromManyThreads) {
  TraceRecorder r(0, "p", 100);
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; ++t) {
    ts.emplace_back([&r] {
      for (int i = 0; i < 50; ++i) r.instant("x", "c", 0, TraceRecorder::now());
    });
  }
  for (auto& t : ts) t.join();
  EXPECT_EQ(r.events(), 100u);
  EXPECT_EQ(r.dropped(), 100u);
  EXPECT_EQ(nlohmann::json::parse(r.json())["otherData"]["dropped_events"], 100);
}

TEST(Trace, FileNamesPerRankAndMerge) {
  EXPECT_EQ(trace_file_for_rank("t.json", 0, 1), "t.json");
  EXPECT_EQ(trace_file_for_rank("t.json", 3, 4), "t.rank3.json");
  EXPECT_EQ(trace_file_for_rank("dir/t", 1, 2), "dir/t.rank1");
  TraceRecorder a(0, "a"), b(1, "b", 0);
  a.instant("x", "c", 0, TraceRecorder::now());
  b.instant("y", "c", 0, TraceRecorder::now());  // dropped
  const auto m = nlohmann::json::parse(merge_traces({a.json(), b.json()}));
  std::set<int> pids;
  for (const auto& e : m["traceEvents"]) pids.insert(e["pid"].get<int>());
  EXPECT_EQ(pids, (std::set<int>{0, 1}));
  EXPECT_EQ(m["otherData"]["dropped_events"], 1);
  EXPECT_THROW(merge_traces({"{\"x\":1}"}), UserError);
  EXPECT_THROW(merge_traces({"not json"}), UserError);
}

}  // namespace
}  // namespace tensorhub
