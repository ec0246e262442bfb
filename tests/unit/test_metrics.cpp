// Coordinator metrics: MeteredClient counts every call into CallMetrics (counts, errors, a
// cumulative latency histogram), bytes served by publishers and relays from acquire/complete;
// render_metrics exposes the directory's state; MetricsServer serves it over HTTP.
#include <httplib.h>

#include <map>
#include <sstream>

#include "coord_test_util.hpp"
#include "tensorhub/coord/metrics.hpp"
#include "tensorhub/coord/metrics_server.hpp"

namespace tensorhub::coord {
namespace {

// name{labels} -> value of every sample line.
std::map<std::string, double> samples(const std::string& text) {
  std::map<std::string, double> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const auto sp = line.rfind(' ');
    out[line.substr(0, sp)] = std::stod(line.substr(sp + 1));
  }
  return out;
}

TEST(Metrics, CallsBytesAndStateOfOnePull) {
  Coordinator c;
  CallMetrics calls;
  MeteredClient m(c, calls);
  const auto pub = add_worker(c, "pub");
  const auto reader = add_worker(c, "reader");
  m.publish(request(pub, "policy", 7, Group{"trainer", 1, 0}, {{"w", 3 * kChunk + 100}}));
  const auto r = m.resolve(ResolveRequest{reader, "policy", std::nullopt, Group{"readers", 1, 0}, 0});
  const auto a = m.acquire(AcquireRequest{reader, "policy", 7, {0, 1, 2, 3}, 16});
  ASSERT_EQ(a.assignments.size(), 4u);
  CompleteRequest done{reader, "policy", 7, {}, {}};
  for (const auto& x : a.assignments) done.results.push_back(ChunkResult{x.chunk, x.holder, x.chunk != 3});
  m.complete(done);
  EXPECT_THROW(m.unpublish(reader, "policy", 7), Error);  // not its reference: counted as an error

  const auto s = samples(render_metrics(c, &calls));
  EXPECT_EQ(s.at("tensorhub_up"), 1);
  EXPECT_EQ(s.at("tensorhub_rpc_calls_total{method=\"Acquire\"}"), 1);
  EXPECT_EQ(s.at("tensorhub_rpc_errors_total{method=\"Unpublish\"}"), 1);
  EXPECT_EQ(s.at("tensorhub_rpc_duration_seconds_bucket{method=\"Publish\",le=\"+Inf\"}"), 1);
  EXPECT_EQ(s.at("tensorhub_rpc_duration_seconds_count{method=\"Resolve\"}"), 1);
  // Cumulative buckets never decrease.
  double prev = 0;
  for (const double le : CallMetrics::kBuckets) {
    char key[128];
    std::snprintf(key, sizeof key, "tensorhub_rpc_duration_seconds_bucket{method=\"Acquire\",le=\"%.9g\"}", le);
    EXPECT_GE(s.at(key), prev);
    prev = s.at(key);
  }
  EXPECT_EQ(s.at("tensorhub_chunks_assigned_total{source=\"publisher\"}"), 4);
  EXPECT_EQ(s.at("tensorhub_chunks_read_total{source=\"publisher\"}"), 3);
  EXPECT_EQ(s.at("tensorhub_bytes_served_total{source=\"publisher\"}"), 3 * kChunk);
  EXPECT_EQ(s.at("tensorhub_bytes_served_total{source=\"relay\"}"), 0);
  EXPECT_EQ(s.at("tensorhub_reads_failed_total"), 1);
  EXPECT_EQ(s.at("tensorhub_version_committed{model=\"policy\",version=\"7\"}"), 1);
  EXPECT_EQ(s.at("tensorhub_version_publishers{model=\"policy\",version=\"7\"}"), 1);
  EXPECT_EQ(s.at("tensorhub_version_bytes{model=\"policy\",version=\"7\"}"), 3 * kChunk + 100);
  EXPECT_EQ(s.at("tensorhub_latest_version{model=\"policy\"}"), 7);
  // The failed read made the publisher suspect (no new reads until it is heard from).
  EXPECT_EQ(s.at("tensorhub_workers{state=\"alive\"}"), 1);
  EXPECT_EQ(s.at("tensorhub_workers{state=\"suspect\"}"), 1);
  EXPECT_GE(s.at("tensorhub_version_pins{model=\"policy\",version=\"7\"}"), 1);  // the group's pull
  m.finish(FinishRequest{reader, "policy", 7, Group{"readers", 1, 0}, r.seq});
}

TEST(Metrics, LabelValuesAreEscaped) {
  Coordinator c;
  const auto pub = add_worker(c, "pub");
  c.publish(request(pub, "a-b.c_d", 1, Group{"trainer", 1, 0}, {{"w", kChunk}}));
  const auto text = render_metrics(c, nullptr);
  EXPECT_NE(text.find("tensorhub_version_readable{model=\"a-b.c_d\",version=\"1\"} 1"), std::string::npos) << text;
  EXPECT_EQ(text.find("tensorhub_rpc_calls_total"), std::string::npos);  // no call metrics given
}

TEST(Metrics, ServerAnswersMetricsAnd404) {
  MetricsServer server("127.0.0.1:0", [] { return std::string("tensorhub_up 1\n"); });
  ASSERT_GT(server.port(), 0);
  httplib::Client client("127.0.0.1", server.port());
  const auto ok = client.Get("/metrics");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
  EXPECT_EQ(ok->body, "tensorhub_up 1\n");
  EXPECT_EQ(ok->get_header_value("Content-Type").rfind("text/plain; version=0.0.4", 0), 0u);
  const auto missing = client.Get("/nope");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
  EXPECT_THROW(MetricsServer("127.0.0.1", [] { return std::string(); }), UserError);
  EXPECT_THROW(MetricsServer("127.0.0.1:99999", [] { return std::string(); }), UserError);
  EXPECT_THROW(MetricsServer("127.0.0.1:" + std::to_string(server.port()), [] { return std::string(); }),
               TransportError);
}

}  // namespace
}  // namespace tensorhub::coord
