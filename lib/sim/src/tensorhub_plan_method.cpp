// The tensorhub method: plan-based pulls (PullEngine's plan mode, lib/transfer/src/plan_reader.*)
// against the real tensorhub::coord::Coordinator, in-process, on the virtual clock
// (coord_run.hpp). Each simulated reader, like PlanReader:
//   resolve; offer_relay (its buffers and progress bytes; a box reader only the trainer shards
//   its box holds whole and contiguous, Scenario::reader_tp); plan every chunk it pulls;
//   read the planned pieces (a step, cut where its source's own pieces end) lowest first, each
//   as soon as its source holds it or is receiving it (the source's progress bytes, read
//   one-sidedly in the product, cost no coordinator call: here the source's byte coverage);
//   ask again for `waiting` ranges after a pause that doubles from 1 ms to 64 ms;
//   report held ranges at each quarter of the pull; at the end release every source and report
//   the rest (one complete), finish.
// Differences from the product, all on the data side. The product keeps `inflight` chunk reads
// in flight, split between sources on the reader's host (NVLink) and off it (its NIC), each
// share on the lowest ready chunks of its class; here a piece is one stream from its source (a
// relay's piece trailing its upstream by one chunk, Fluid), and per class a reader starts its
// planned pieces lowest first while they are ready (the source covers them), until it reads
// Scenario::inflight pieces or one of the class whose source had all of it at the start: such a
// piece takes the class's share (its chunks are all ready, and the lowest), a piece that trails
// a relay only some. Progress polls take no time.
// With Scenario::rpc_s a plan's reads start one control round trip after the call.
#include <algorithm>
#include <deque>
#include <map>
#include <set>

#include "coord_run.hpp"
#include "tensorhub/core/error.hpp"

namespace tensorhub::sim {
namespace {

constexpr double kPauseS = 0.001;  // EngineOptions::replan_pause default order
constexpr double kMaxPauseS = 0.064;

class PlanRun : CoordRun {
 public:
  explicit PlanRun(const Scenario& s) : CoordRun(s) {}

  MethodResult go() {
    publish();
    // The first readers register first (a hub registers when it starts, before its first pull),
    // then all pull at t = 0; the last Scenario::joiners join later in waves (join_time_s): each
    // registers and pulls when it arrives.
    const auto base =
        static_cast<std::uint32_t>(readers_.size()) - std::min<std::uint32_t>(s_.joiners, readers_.size());
    for (std::uint32_t i = 0; i < readers_.size(); ++i) {
      rs_.emplace_back();
      rs_.back().node = readers_[i];
      if (i < base) rs_.back().id = add_worker(readers_[i]);
    }
    for (std::uint32_t i = 0; i < base; ++i) start(i);
    // A wave registers together (its hubs start together), then each of it pulls.
    for (std::uint32_t first = base; first < readers_.size();) {
      const double t = join_time_s(s_, first - base);
      std::uint32_t end = first;
      while (end < readers_.size() && join_time_s(s_, end - base) == t) {
        rs_[end].join_s = t;
        rs_[end].joiner = true;
        ++end;
      }
      fluid_.at(t, [this, first, end] {
        for (auto i = first; i < end; ++i) rs_[i].id = add_worker(rs_[i].node);
        for (auto i = first; i < end; ++i) start(i);
      });
      first = end;
    }
    fluid_.run();
    MethodResult r;
    r.method = "tensorhub";
    r.protocol = "plan";
    std::vector<double> done;
    for (const auto& rd : rs_) {
      if (!rd.finished) throw ContractViolation("sim tensorhub: a reader did not finish");
      done.push_back(rd.done_s);
      if (rd.joiner) r.joiner_s.push_back(rd.done_s - rd.join_s);
    }
    r.joiner_trainer_bytes = joiner_trainer_bytes_;
    fill(r, done);
    return r;
  }

 private:
  struct Piece {
    std::uint32_t first = 0, count = 0;
    coord::WorkerId holder = 0;
    bool started = false;
  };
  struct Reader {
    std::uint32_t node = 0;
    coord::WorkerId id = 0;
    std::uint64_t seq = 0;
    std::map<std::uint32_t, Piece> pieces;  // by first chunk: planned, not yet read
    std::vector<coord::ChunkRange> waiting;
    std::set<coord::WorkerId> sources;
    std::set<std::uint32_t> bounds;       // where its planned pieces begin and end
    std::set<std::uint32_t> blocked_on;   // source nodes it waits on (blocked_)
    std::vector<coord::ChunkRange> held;  // since the last report
    std::uint32_t want = 0;               // chunks it pulls (all, or its box's: Scenario::reader_tp)
    std::vector<bool> relayed;            // by manifest tensor: offered as a relay
    bool relays = false;                  // some tensor is
    std::uint32_t done = 0, next_report = 0;
    std::size_t reading = 0;       // pieces being read
    std::size_t full[2] = {0, 0};  // of those, per class (0 off host, 1 on it): source had all of it
    bool finished = false;
    bool joiner = false;  // joined after t = 0 (Scenario::joiners)
    double join_s = 0;
    double pause = kPauseS;
    double done_s = 0;
  };

  std::uint32_t chunks() const { return static_cast<std::uint32_t>(manifest_.chunks.size()); }

  void start(std::uint32_t i) {
    Reader& r = rs_[i];
    reader_of_[r.id] = i;
    r.seq = resolve(i, r.id);
    // A box reader offers the trainer shards it relays (relays_shard), if any.
    std::vector<std::string> regions(manifest_.tensors.size());
    r.relayed.assign(manifest_.tensors.size(), false);
    for (std::size_t t = 0; t < regions.size(); ++t) {
      r.relayed[t] = relays_shard(s_, i, manifest_.tensors[t].shard);
      if (r.relayed[t]) regions[t] = "sim";
      r.relays |= r.relayed[t];
    }
    if (r.relays) {
      coord::RelayOffer offer{r.id, "policy", 1, std::move(regions), "sim"};
      call([&] {
        coord_.offer_relay(offer);
        return 0;
      });
    }
    // The chunks its ranges meet (whole chunks, as the product reads them).
    const auto ranges = reader_ranges(s_, i);
    for (std::uint32_t c = 0; c < chunks(); ++c) {
      const auto span = bytes_of(c, 1);  // not a structured binding: Clang 14 cannot capture one
      const bool meets = std::any_of(ranges.begin(), ranges.end(),
                                     [&](const auto& x) { return span.first < x.second && x.first < span.second; });
      if (!meets) continue;
      if (!r.waiting.empty() && r.waiting.back().first + r.waiting.back().count == c) {
        ++r.waiting.back().count;
      } else {
        r.waiting.push_back(coord::ChunkRange{c, 1});
      }
      ++r.want;
    }
    if (r.want == 0) throw ContractViolation("sim tensorhub: a reader pulls no chunk");
    r.next_report = quarter(r);
    plan(i);
  }

  static std::uint32_t quarter(const Reader& r) { return std::max<std::uint32_t>(1, (r.want + 3) / 4); }

  void plan(std::uint32_t i) {
    Reader& r = rs_[i];
    coord::PlanRequest req{r.id, "policy", 1, std::move(r.waiting), {}};
    r.waiting.clear();
    const auto reply = call([&] { return coord_.plan(req); });
    if (!reply.unavailable.empty()) throw ContractViolation("sim tensorhub: chunks unavailable");
    std::vector<Piece> got;
    for (const auto& st : reply.steps) {
      const auto holder = reply.sources.at(st.source).holder;
      r.sources.insert(holder);
      cut(holder, st.range, got);
    }
    for (const auto& p : got) {
      r.bounds.insert(p.first);
      r.bounds.insert(p.first + p.count);
    }
    r.waiting = reply.waiting;
    auto accept = [this, i, got = std::move(got)] {
      for (const auto& p : got) rs_[i].pieces[p.first] = p;
      pump(i);
    };
    if (s_.rpc_s > 0) {
      fluid_.at(fluid_.now() + s_.rpc_s, accept);
    } else {
      accept();
    }
    if (!r.waiting.empty()) {
      fluid_.at(fluid_.now() + r.pause, [this, i] { plan(i); });
      r.pause = std::min(r.pause * 2, kMaxPauseS);
    } else {
      r.pause = kPauseS;
    }
  }

  // Cuts `range` planned from `holder` where the holder's own planned pieces end (a relay
  // receives each of its pieces through one pipe); a publisher holds all of it.
  void cut(coord::WorkerId holder, coord::ChunkRange range, std::vector<Piece>& out) const {
    const auto it = reader_of_.find(holder);
    std::uint32_t c = range.first;
    const std::uint32_t end = range.first + range.count;
    while (c < end) {
      std::uint32_t stop = end;
      if (it != reader_of_.end()) {
        const auto& bounds = rs_[it->second].bounds;
        const auto b = bounds.upper_bound(c);
        if (b != bounds.end()) stop = std::min(stop, *b);
      }
      out.push_back(Piece{c, stop - c, holder, false});
      c = stop;
    }
  }

  // Starts the lowest ready planned pieces of each class (rules at the top); waits for the
  // sources of the pieces it passed over because they were not ready.
  void pump(std::uint32_t i) {
    Reader& r = rs_[i];
    if (r.finished) return;
    const std::size_t limit = std::max<std::uint32_t>(s_.inflight, 1);
    bool started = false;
    std::vector<std::uint32_t> not_ready;
    for (auto it = r.pieces.begin(); it != r.pieces.end() && r.reading < limit;) {
      const Piece p = it->second;
      const auto src = node_of_.at(p.holder);
      const int cls = net_.node(src).host == net_.node(r.node).host ? 1 : 0;
      const auto [b, e] = bytes_of(p.first, p.count);
      if (r.full[cls] > 0) {
        ++it;
        continue;
      }
      if (!fluid_.covers(src, b, e)) {
        not_ready.push_back(src);
        ++it;
        continue;
      }
      const bool full = fluid_.holds(src, b, e);
      ++r.reading;
      if (full) ++r.full[cls];
      if (r.joiner && trainer_node_.count(src) > 0) joiner_trainer_bytes_ += e - b;
      it = r.pieces.erase(it);
      fluid_.read(src, r.node, b, e, [this, i, p, full, cls] { landed(i, p, full ? cls : -1); });
      started = true;
    }
    if (started) wake(r.node);
    for (const auto n : not_ready) {
      if (r.blocked_on.insert(n).second) blocked_[n].push_back(i);
    }
  }

  // Node `n` started receiving a range: the readers waiting for one of its ranges look again.
  void wake(std::uint32_t n) {
    auto it = blocked_.find(n);
    if (it == blocked_.end()) return;
    std::vector<std::uint32_t> w;
    w.swap(it->second);
    blocked_.erase(it);
    for (auto i : w) rs_[i].blocked_on.erase(n);
    for (auto i : w) pump(i);
  }

  // `full_class`: the class of a piece whose source had all of it (pump), else -1.
  void landed(std::uint32_t i, const Piece& p, int full_class) {
    Reader& r = rs_[i];
    --r.reading;
    if (full_class >= 0) --r.full[full_class];
    r.done += p.count;
    for (auto c = p.first; c < p.first + p.count; ++c) {  // the chunks of the shards it relays
      if (!r.relayed[manifest_.chunks[c].tensor]) continue;
      if (!r.held.empty() && r.held.back().first + r.held.back().count == c) {
        ++r.held.back().count;
      } else {
        r.held.push_back(coord::ChunkRange{c, 1});
      }
    }
    // A relaying PlanReader reports at each quarter of the pull; a piece lands at once here, so
    // the quarters it crossed are reported when it lands (one call each, as the product makes them).
    while (r.relays && r.done >= r.next_report && r.next_report < r.want) {
      coord::CompleteRequest c;
      c.reader = r.id;
      c.model = "policy";
      c.version = 1;
      c.held_ranges = std::move(r.held);
      r.held.clear();
      call([&] {
        coord_.complete(c);
        return 0;
      });
      r.next_report += quarter(r);
    }
    if (r.done == r.want) {
      coord::CompleteRequest c;
      c.reader = r.id;
      c.model = "policy";
      c.version = 1;
      c.held_ranges = std::move(r.held);
      c.release_sources.assign(r.sources.begin(), r.sources.end());
      call([&] {
        coord_.complete(c);
        return 0;
      });
      finish(i, r.id, r.seq);
      r.finished = true;
      r.done_s = fluid_.now();
      return;
    }
    pump(i);
  }

  std::deque<Reader> rs_;
  std::set<std::uint32_t> trainer_node_{trainers_.begin(), trainers_.end()};
  double joiner_trainer_bytes_ = 0;  // bytes joiners read from the trainers
  std::map<coord::WorkerId, std::uint32_t> reader_of_;
  std::map<std::uint32_t, std::vector<std::uint32_t>> blocked_;  // source node -> readers
};

}  // namespace

MethodResult run_tensorhub_plan(const Scenario& s) { return PlanRun(s).go(); }

}  // namespace tensorhub::sim
