// The TensorHub method: the real tensorhub::coord::Coordinator, in-process, on the simulator's
// virtual clock (leases off). Each simulated reader does what PullEngine does today (the
// per-chunk protocol): resolve, offer_relay, acquire batches of its needed chunk ids (in chunk
// order, at most `inflight` reads in flight), read each assigned chunk from its holder as a
// pipe, complete it with now_held (relay) when it lands, finish. A reader the coordinator gives
// nothing (every holder's K slots busy) asks again at the next completion anywhere or after the
// engine's backoff. With Scenario::rpc_s, an acquire's reads start and a complete takes effect one
// control round trip later. Every coordinator call is counted and timed (thread CPU time).
#include <time.h>

#include <algorithm>
#include <chrono>
#include <deque>
#include <unordered_map>

#include "tensorhub/coord/coordinator.hpp"
#include "tensorhub/core/error.hpp"
#include "tensorhub/sim/fluid.hpp"
#include "tensorhub/sim/scenario.hpp"

namespace tensorhub::sim {
namespace {

double thread_cpu_s() {
  timespec ts{};
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
    throw ContractViolation("clock_gettime(CLOCK_THREAD_CPUTIME_ID) failed");
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

constexpr double kBackoffS = 0.001;  // PullEngine's idle backoff order of magnitude

class Run {
 public:
  explicit Run(const Scenario& s)
      : s_(s),
        net_(s.topo),
        fluid_(net_, s.chunk_bytes),
        coord_(config()),
        trainers_(trainer_nodes(s, net_)),
        readers_(reader_nodes(s, net_)) {}

  MethodResult go() {
    publish();
    for (std::uint32_t i = 0; i < readers_.size(); ++i) start(i);
    fluid_.run();
    MethodResult r;
    r.method = "tensorhub";
    r.protocol = "acquire";
    std::vector<double> done;
    for (const auto& rd : rs_) {
      if (!rd.finished) throw ContractViolation("sim tensorhub: a reader did not finish");
      done.push_back(rd.done_s);
    }
    summarize(s_, net_, done, r);
    r.control_msgs = msgs_;
    r.coord_cpu_s = cpu_s_;
    r.events = fluid_.events();
    r.pipes = fluid_.pipes();
    return r;
  }

 private:
  struct Reader {
    std::uint32_t node = 0;
    coord::WorkerId id = 0;
    std::uint64_t seq = 0;
    std::vector<char> state;  // 0 needed, 1 in flight, 2 held
    std::uint32_t held = 0, inflight = 0;
    bool finished = false, waiting = false;
    double done_s = 0;
  };

  coord::CoordinatorConfig config() {
    coord::CoordinatorConfig c;
    c.max_readers_per_source = s_.max_readers_per_source;
    c.lease = std::chrono::milliseconds(0);
    c.incarnation = 1;
    c.clock = [this] {
      return std::chrono::steady_clock::time_point{} + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                           std::chrono::duration<double>(fluid_.now()));
    };
    return c;
  }

  template <typename F>
  auto call(F&& f) {
    ++msgs_;
    const double t0 = thread_cpu_s();
    struct Add {
      double& sum;
      double t0;
      ~Add() { sum += thread_cpu_s() - t0; }
    } add{cpu_s_, t0};
    return f();
  }

  coord::WorkerId add_worker(std::uint32_t node) {
    coord::WorkerInfo w;
    w.endpoint = "sim:" + std::to_string(node);
    w.transport = "local";
    w.host = net_.host_label(node);
    w.rack = net_.rack_label(node);
    w.dc = net_.dc_label(node);
    w.gpu = static_cast<std::int32_t>(net_.node(node).gpu);
    const auto id = coord_.register_worker(w);
    node_of_[id] = node;
    return id;
  }

  void publish() {
    const auto chunk = static_cast<std::uint64_t>(s_.chunk_bytes);
    for (std::uint32_t t = 0; t < trainers_.size(); ++t) {
      const auto [b, e] = shard_range(s_, t);
      const auto id = add_worker(trainers_[t]);
      coord::PublishRequest p;
      p.worker = id;
      p.model = "policy";
      p.version = 1;
      p.chunk_bytes = chunk;
      p.group = coord::Group{"trainer", static_cast<std::uint32_t>(trainers_.size()), t};
      p.shard.shard = t;
      const auto bytes = static_cast<std::uint64_t>(e - b);
      if (bytes > 0) {
        p.shard.tensors.push_back(TensorSpec{"w" + std::to_string(t), DType::kU8, {static_cast<std::int64_t>(bytes)}});
        p.shard.checksums.emplace_back(chunk_count(bytes, chunk), 1);
        p.regions.push_back("sim");
        fluid_.hold(trainers_[t], b, e);
      }
      coord_.publish(p);
    }
  }

  void start(std::uint32_t i) {
    rs_.emplace_back();
    Reader& r = rs_.back();
    r.node = readers_[i];
    r.id = add_worker(r.node);
    const auto reply = call([&] {
      return coord_.resolve(coord::ResolveRequest{r.id, "policy", std::nullopt, {"r" + std::to_string(i), 1, 0}, 0});
    });
    r.seq = reply.seq;
    if (manifest_.chunks.empty()) set_manifest(reply.manifest);
    coord::RelayOffer offer{r.id, "policy", 1, std::vector<std::string>(manifest_.tensors.size(), "sim"), {}};
    call([&] {
      coord_.offer_relay(offer);
      return 0;
    });
    r.state.assign(manifest_.chunks.size(), 0);
    pump(i);
  }

  void set_manifest(const Manifest& m) {
    manifest_ = m;
    // Byte offset of each chunk in the model's byte space: shard t's tensor starts at shard_range(t).
    base_.resize(m.tensors.size());
    for (std::size_t k = 0; k < m.tensors.size(); ++k) base_[k] = shard_range(s_, m.tensors[k].shard).first;
  }

  void pump(std::uint32_t i) {
    Reader& r = rs_[i];
    if (r.finished) return;
    if (r.held == r.state.size()) {
      call([&] {
        coord_.finish(coord::FinishRequest{r.id, "policy", 1, {"r" + std::to_string(i), 1, 0}, r.seq});
        return 0;
      });
      r.finished = true;
      r.done_s = fluid_.now();
      return;
    }
    if (r.inflight >= s_.inflight) return;
    coord::AcquireRequest req{r.id, "policy", 1, {}, s_.inflight - r.inflight};
    for (std::uint32_t c = 0; c < r.state.size() && req.chunks.size() < s_.batch; ++c) {
      if (r.state[c] == 0) req.chunks.push_back(c);
    }
    if (req.chunks.empty()) return;
    const auto reply = call([&] { return coord_.acquire(req); });
    if (!reply.unavailable.empty()) throw ContractViolation("sim tensorhub: chunks unavailable");
    for (const auto& a : reply.assignments) {
      r.state[a.chunk] = 1;
      ++r.inflight;
      const auto& spec = manifest_.chunks.at(a.chunk);
      const double b = base_[spec.tensor] + static_cast<double>(spec.offset);
      const auto holder = a.holder;
      const auto chunk = a.chunk;
      const auto src = node_of_.at(holder);
      const auto dst = r.node;
      const double e = b + static_cast<double>(spec.length);
      auto start = [this, i, holder, chunk, src, dst, b, e] {
        fluid_.read(src, dst, b, e, [this, i, holder, chunk] { landed(i, chunk, holder); });
      };
      if (s_.rpc_s > 0) {
        fluid_.at(fluid_.now() + s_.rpc_s, start);  // the acquire's reply arrives one RTT later
      } else {
        start();
      }
    }
    if (r.inflight == 0 && !r.waiting) {
      r.waiting = true;
      waiting_.push_back(i);
      if (!retry_armed_) {
        retry_armed_ = true;
        fluid_.at(fluid_.now() + kBackoffS, [this] {
          retry_armed_ = false;
          retry_waiting();
        });
      }
    }
  }

  void retry_waiting() {
    std::deque<std::uint32_t> w;
    w.swap(waiting_);
    for (auto i : w) rs_[i].waiting = false;
    for (auto i : w) pump(i);
  }

  void landed(std::uint32_t i, std::uint32_t chunk, coord::WorkerId holder) {
    if (s_.rpc_s > 0) {  // the complete reaches the coordinator one RTT later
      fluid_.at(fluid_.now() + s_.rpc_s, [this, i, chunk, holder] { completed(i, chunk, holder); });
    } else {
      completed(i, chunk, holder);
    }
  }

  void completed(std::uint32_t i, std::uint32_t chunk, coord::WorkerId holder) {
    Reader& r = rs_[i];
    r.state[chunk] = 2;
    ++r.held;
    --r.inflight;
    coord::CompleteRequest c;
    c.reader = r.id;
    c.model = "policy";
    c.version = 1;
    c.results.push_back(coord::ChunkResult{chunk, holder, true});
    c.now_held.push_back(chunk);
    call([&] {
      coord_.complete(c);
      return 0;
    });
    pump(i);
    retry_waiting();
  }

  const Scenario& s_;
  Network net_;
  Fluid fluid_;
  coord::Coordinator coord_;
  std::vector<std::uint32_t> trainers_, readers_;
  std::unordered_map<coord::WorkerId, std::uint32_t> node_of_;
  Manifest manifest_;
  std::vector<double> base_;
  std::deque<Reader> rs_;
  std::deque<std::uint32_t> waiting_;
  bool retry_armed_ = false;
  std::uint64_t msgs_ = 0;
  double cpu_s_ = 0;
};

}  // namespace

MethodResult run_tensorhub(const Scenario& s) { return Run(s).go(); }

}  // namespace tensorhub::sim
