// HubOptions::trace_path: a pull's trace (Chrome trace-event JSON) names every chunk it read
// exactly once, with its source worker (publisher or relay), bytes and a span on a read lane,
// and the control calls and verification around it; stage times land in PullResult.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "hub_test_util.hpp"

namespace tensorhub::test {
namespace {

constexpr std::uint64_t kBytes = 3 * kChunk + 512;  // 4 chunks, the last partial

nlohmann::json read_json(const std::filesystem::path& p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return nlohmann::json::parse(ss.str());
}

struct TempDir {
  std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("th-trace-" + std::to_string(getpid()) + "-" + std::to_string(rand()));
  TempDir() { std::filesystem::create_directories(path); }
  ~TempDir() { std::filesystem::remove_all(path); }
};

TEST_F(LocalHubsK1, TraceNamesEveryChunkOfAPullOnceWithItsSource) {
  TempDir dir;
  auto& pub = add_hub();
  HubOptions ta = small_chunks();
  ta.trace_path = (dir.path / "a.json").string();
  ta.verify_threads = 1;  // checks overlap the reads; their time still fits in the transfer's
  auto& a = add_hub(ta);
  HubOptions tb = small_chunks();
  tb.trace_path = (dir.path / "b.json").string();
  auto& b = add_hub(tb);
  Buffers src(3, kBytes);
  src.fill(1);
  pub.publish("m", 1, src.tensors, std::nullopt);

  Buffers da(3, kBytes);
  const auto ra = a.pull("m", Version::latest(), da.tensors, {});
  EXPECT_GE(ra.transfer_seconds, ra.verify_seconds);
  EXPECT_GE(ra.resolve_seconds, 0.0);
  Buffers db(3, kBytes);
  b.pull("m", Version::latest(), db.tensors, {});  // from a (K = 1: a relay before the publisher)
  a.close();
  b.close();

  const std::uint64_t chunks = 3 * 4;
  for (const auto& [file, from] : {std::pair{"a.json", pub.worker()}, std::pair{"b.json", a.worker()}}) {
    SCOPED_TRACE(file);
    const auto j = read_json(dir.path / file);
    ASSERT_TRUE(j["traceEvents"].is_array());
    std::map<std::int64_t, int> seen;
    std::uint64_t bytes = 0;
    std::map<std::string, int> names;
    for (const auto& e : j["traceEvents"]) {
      ASSERT_TRUE(e.contains("ph") && e.contains("pid") && e.contains("name"));
      ++names[e["name"].get<std::string>()];
      if (e.value("cat", "") != "chunk") continue;
      EXPECT_EQ(e["ph"], "X");
      EXPECT_TRUE(e["ts"].is_number_integer() && e["dur"].is_number_integer());
      EXPECT_GE(e["tid"].get<int>(), static_cast<int>(TraceRecorder::kReadLane));
      const auto& args = e["args"];
      ++seen[args["chunk"].get<std::int64_t>()];
      bytes += args["bytes"].get<std::uint64_t>();
      EXPECT_EQ(args["source_worker"].get<std::uint64_t>(), from);
      EXPECT_EQ(args["source"], from == pub.worker() ? "publisher" : "relay");
      EXPECT_EQ(args["transport"], "local");
    }
    ASSERT_EQ(seen.size(), chunks);
    for (const auto& [c, n] : seen) EXPECT_EQ(n, 1) << "chunk " << c;
    EXPECT_EQ(seen.begin()->first, 0);
    EXPECT_EQ(seen.rbegin()->first, static_cast<std::int64_t>(chunks - 1));
    EXPECT_EQ(bytes, 3 * kBytes);
    // Plan-based pulls (the default): one plan call instead of acquires.
    for (const char* n : {"resolve", "plan", "complete", "finish", "verify", "Hub::pull", "offer_relay"}) {
      EXPECT_GT(names[n], 0) << n;
    }
    EXPECT_EQ(j["otherData"]["dropped_events"], 0);
  }
}

TEST_F(LocalHubs, NoTraceFileWithoutTheOption) {
  TempDir dir;
  auto& pub = add_hub();
  auto& a = add_hub();
  Buffers src(1, kBytes);
  src.fill(1);
  pub.publish("m", 1, src.tensors, std::nullopt);
  Buffers da(1, kBytes);
  a.pull("m", Version::latest(), da.tensors, {});
  a.close();
  EXPECT_TRUE(std::filesystem::is_empty(dir.path));
}

}  // namespace
}  // namespace tensorhub::test
