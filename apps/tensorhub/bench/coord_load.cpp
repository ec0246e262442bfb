// The coordinator load (coord_load.hpp). Coordinator CPU: in-process, the thread CPU time
// (CLOCK_THREAD_CPUTIME_ID) each reader spends inside its coordinator calls, summed (the calls
// run on the reader's thread; waiting for the coordinator's mutex costs no CPU). Over gRPC, the
// process CPU time during the pulls minus the reader threads' own CPU time: what the server's
// threads (gRPC and the coordinator) spent.
#include "bench/coord_load.hpp"

#include <time.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <thread>

#include "tensorhub/coord/coordinator.hpp"
#include "tensorhub/coord/grpc_client.hpp"
#include "tensorhub/coord/grpc_server.hpp"
#include "tensorhub/core/error.hpp"

namespace tensorhub::cli::bench {
namespace {

using namespace coord;
using Clock = std::chrono::steady_clock;

double cpu_now(clockid_t id) {
  timespec ts{};
  if (clock_gettime(id, &ts) != 0) throw ContractViolation("clock_gettime failed");
  return static_cast<double>(ts.tv_sec) + ts.tv_nsec * 1e-9;
}

constexpr std::uint64_t kChunkBytes = 4ull << 20;

PublishRequest publication(WorkerId w, const LoadConfig& c) {
  PublishRequest r;
  r.worker = w;
  r.model = "bench";
  r.version = 1;
  r.chunk_bytes = kChunkBytes;
  r.group = Group{"trainer", 1, 0};
  r.shard.shard = 0;
  const std::uint32_t tensors = std::clamp<std::uint32_t>(c.tensors, 1, c.chunks);
  std::uint64_t sum = 1;
  for (std::uint32_t t = 0; t < tensors; ++t) {
    const std::uint32_t n = c.chunks / tensors + (t < c.chunks % tensors ? 1 : 0);
    r.shard.tensors.push_back(
        TensorSpec{"t" + std::to_string(t), DType::kU8, {static_cast<std::int64_t>(std::uint64_t{n} * kChunkBytes)}});
    r.shard.checksums.emplace_back(n);
    for (auto& x : r.shard.checksums.back()) x = sum++;
    r.regions.push_back("region:p:" + std::to_string(t));
  }
  return r;
}

struct Reader {
  WorkerId id = 0;
  std::uint64_t calls = 0;
  std::uint64_t done = 0;
  double cpu_in_calls = 0;
  double thread_cpu = 0;
  std::vector<double> latency_us;
};

class Pull {
 public:
  Pull(Client& client, const LoadConfig& c, Reader& r, Clock::time_point deadline)
      : client_(client), c_(c), r_(r), deadline_(deadline) {}

  template <class F>
  auto call(F&& f) {
    const auto w0 = Clock::now();
    const double c0 = cpu_now(CLOCK_THREAD_CPUTIME_ID);
    auto out = f();
    r_.cpu_in_calls += cpu_now(CLOCK_THREAD_CPUTIME_ID) - c0;
    r_.latency_us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - w0).count());
    ++r_.calls;
    return out;
  }

  void run() {
    const double t0 = cpu_now(CLOCK_THREAD_CPUTIME_ID);
    const auto res = call([&] { return client_.resolve(ResolveRequest{r_.id, "bench", std::nullopt, group(), 0}); });
    std::vector<std::string> regions;
    for (std::size_t t = 0; t < res.manifest->tensors.size(); ++t) regions.push_back("region:" + std::to_string(r_.id));
    call([&] {
      client_.offer_relay(RelayOffer{r_.id, "bench", 1, regions, "progress:" + std::to_string(r_.id)});
      return 0;
    });
    if (c_.mode == LoadMode::kPlan) {
      by_plan();
    } else {
      by_acquire();
    }
    call([&] {
      client_.finish(FinishRequest{r_.id, "bench", 1, group(), res.seq});
      return 0;
    });
    r_.thread_cpu = cpu_now(CLOCK_THREAD_CPUTIME_ID) - t0;
  }

 private:
  Group group() const { return Group{"g" + std::to_string(r_.id), 1, 0}; }

  void by_plan() {
    std::vector<ChunkRange> want{ChunkRange{0, c_.chunks}};
    PlanReply plan;
    for (;;) {
      plan = call([&] { return client_.plan(PlanRequest{r_.id, "bench", 1, want, {}}); });
      if (plan.waiting.empty() || Clock::now() > deadline_) break;
      want = plan.waiting;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    std::vector<ChunkRange> got;
    for (const auto& s : plan.steps) got.push_back(s.range);
    const std::size_t waves = std::max<std::size_t>(1, std::min<std::size_t>(c_.waves, got.size()));
    for (std::size_t w = 0; w < waves; ++w) {
      CompleteRequest q;
      q.reader = r_.id;
      q.model = "bench";
      q.version = 1;
      for (std::size_t i = w; i < got.size(); i += waves) q.held_ranges.push_back(got[i]);
      if (w + 1 == waves) {
        for (const auto& s : plan.sources) q.release_sources.push_back(s.holder);
      }
      call([&] {
        client_.complete(q);
        return 0;
      });
    }
    for (const auto& r : got) r_.done += r.count;
  }

  void by_acquire() {
    std::vector<std::uint32_t> need(c_.chunks);
    for (std::uint32_t i = 0; i < c_.chunks; ++i) need[i] = i;
    while (!need.empty() && Clock::now() < deadline_) {
      const auto reply = call([&] { return client_.acquire(AcquireRequest{r_.id, "bench", 1, need, c_.batch}); });
      if (!reply.unavailable.empty()) throw ContractViolation("bench coordinator: chunks unavailable");
      if (reply.assignments.empty()) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
        continue;
      }
      CompleteRequest q;
      q.reader = r_.id;
      q.model = "bench";
      q.version = 1;
      for (const auto& a : reply.assignments) {
        q.results.push_back(ChunkResult{a.chunk, a.holder, true});
        q.now_held.push_back(a.chunk);
      }
      call([&] {
        client_.complete(q);
        return 0;
      });
      std::vector<std::uint32_t> left;
      left.reserve(need.size());
      std::size_t j = 0;
      std::vector<std::uint32_t> got(q.now_held);
      std::sort(got.begin(), got.end());
      for (const auto c : need) {
        while (j < got.size() && got[j] < c) ++j;
        if (j < got.size() && got[j] == c) continue;
        left.push_back(c);
      }
      r_.done += need.size() - left.size();
      need = std::move(left);
    }
  }

  Client& client_;
  const LoadConfig& c_;
  Reader& r_;
  Clock::time_point deadline_;
};

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  const auto i = static_cast<std::size_t>(p * static_cast<double>(v.size() - 1));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(i), v.end());
  return v[i];
}

}  // namespace

std::string to_string(LoadMode mode) { return mode == LoadMode::kPlan ? "plan" : "acquire"; }

LoadResult run_load(const LoadConfig& c) {
  if (c.readers == 0 || c.chunks == 0) throw UserError("bench coordinator: readers and chunks must be > 0");
  CoordinatorConfig cfg;
  cfg.max_readers_per_source = std::max<std::uint32_t>(c.k, 1);
  cfg.plan_fanout = std::max<std::uint32_t>(c.fanout, 1);
  cfg.lease = std::chrono::milliseconds(0);
  cfg.slot_grace = std::chrono::milliseconds(0);
  Coordinator coordinator(cfg);
  std::unique_ptr<GrpcServer> server;
  std::unique_ptr<GrpcClient> remote;
  Client* client = &coordinator;
  if (c.grpc) {
    server = std::make_unique<GrpcServer>(coordinator, "127.0.0.1:0");
    remote = std::make_unique<GrpcClient>("127.0.0.1:" + std::to_string(server->port()), std::chrono::seconds(30),
                                          ClientAuth{});
    client = remote.get();
  }
  WorkerInfo pi{"local:publisher", "local", "host-p", "", "", -1, -1, -1};
  const auto publisher = client->register_worker(pi);
  client->publish(publication(publisher, c));
  std::vector<Reader> readers(c.readers);
  for (std::uint32_t i = 0; i < c.readers; ++i) {
    WorkerInfo info{"local:r" + std::to_string(i), "local", "host-" + std::to_string(i / 8), "", "", -1, -1, -1};
    readers[i].id = client->register_worker(info);
  }
  const double p0 = cpu_now(CLOCK_PROCESS_CPUTIME_ID);
  const auto t0 = Clock::now();
  const auto deadline = t0 + c.budget;
  std::vector<std::thread> threads;
  std::mutex err_mu;
  std::string error;
  for (auto& r : readers) {
    threads.emplace_back([&, rp = &r] {
      try {
        Pull(*client, c, *rp, deadline).run();
      } catch (const std::exception& e) {
        std::lock_guard lock(err_mu);
        if (error.empty()) error = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  LoadResult out;
  out.wall_s = std::chrono::duration<double>(Clock::now() - t0).count();
  const double process_cpu = cpu_now(CLOCK_PROCESS_CPUTIME_ID) - p0;
  if (!error.empty()) throw TransportError("bench coordinator: a reader failed: " + error);
  std::vector<double> lat;
  double in_calls = 0;
  double reader_threads = 0;
  for (const auto& r : readers) {
    out.calls += r.calls;
    out.chunks_done += r.done;
    in_calls += r.cpu_in_calls;
    reader_threads += r.thread_cpu;
    lat.insert(lat.end(), r.latency_us.begin(), r.latency_us.end());
  }
  out.chunks_wanted = std::uint64_t{c.readers} * c.chunks;
  out.complete = out.chunks_done == out.chunks_wanted;
  out.coord_cpu_s = c.grpc ? std::max(0.0, process_cpu - reader_threads) : in_calls;
  out.p50_us = percentile(lat, 0.5);
  out.p99_us = percentile(lat, 0.99);
  return out;
}

}  // namespace tensorhub::cli::bench
