// The tensorhub-chunk method: the real tensorhub::coord::Coordinator, in-process, on the
// simulator's virtual clock (coord_run.hpp). Each simulated reader does what PullEngine's acquire
// mode does (the per-chunk protocol, used with a coordinator that does not plan): resolve, offer_relay, acquire batches
// of its needed chunk ids (in chunk order, at most `inflight` reads in flight), read each assigned chunk from its
// holder as a pipe, complete it with now_held (relay) when it lands, finish. A reader the coordinator gives nothing
// (every holder's K slots busy) asks again at the next completion anywhere or after the engine's backoff. With
// Scenario::rpc_s, an acquire's reads start and a complete takes effect one control round trip later. Every coordinator
// call is counted and timed (thread CPU time).
#include <deque>

#include "coord_run.hpp"
#include "tensorhub/core/error.hpp"

namespace tensorhub::sim {
namespace {

constexpr double kBackoffS = 0.001;  // PullEngine's idle backoff order of magnitude

class Run : CoordRun {
 public:
  explicit Run(const Scenario& s) : CoordRun(s) {}

  MethodResult go() {
    publish();
    for (std::uint32_t i = 0; i < readers_.size(); ++i) start(i);
    fluid_.run();
    MethodResult r;
    r.method = "tensorhub-chunk";
    r.protocol = "acquire";
    std::vector<double> done;
    for (const auto& rd : rs_) {
      if (!rd.finished) throw ContractViolation("sim tensorhub: a reader did not finish");
      done.push_back(rd.done_s);
    }
    fill(r, done);
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

  void start(std::uint32_t i) {
    rs_.emplace_back();
    Reader& r = rs_.back();
    r.node = readers_[i];
    r.id = add_worker(r.node);
    r.seq = resolve(i, r.id);
    coord::RelayOffer offer{r.id, "policy", 1, std::vector<std::string>(manifest_.tensors.size(), "sim"), {}};
    call([&] {
      coord_.offer_relay(offer);
      return 0;
    });
    r.state.assign(manifest_.chunks.size(), 0);
    pump(i);
  }

  void pump(std::uint32_t i) {
    Reader& r = rs_[i];
    if (r.finished) return;
    if (r.held == r.state.size()) {
      finish(i, r.id, r.seq);
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

  std::deque<Reader> rs_;
  std::deque<std::uint32_t> waiting_;
  bool retry_armed_ = false;
};

}  // namespace

MethodResult run_tensorhub_chunk(const Scenario& s) { return Run(s).go(); }

}  // namespace tensorhub::sim
