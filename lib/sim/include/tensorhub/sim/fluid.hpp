// The flow-level engine: a virtual clock and pipes with max-min fair rates.
//
// A pipe moves a byte range [begin, end) of the model from a source node to a destination node
// along the network path. A source either holds the range (publisher, finished relay) or is
// itself still receiving it through an upstream pipe; then the pipe trails that upstream pipe by
// one chunk (a relay serves a chunk once it holds all of it: pipelined relay at chunk
// granularity without one event per chunk). Between events every pipe has a constant rate:
// max-min fair over link capacities (progressive filling), a pipe that has caught up with its
// upstream rising no faster than it. Rates are recomputed only at events: a pipe finishes,
// catches up, its upstream delivers its first chunk or the end of its range, or a timer fires.
// A whole source->reader range is one pipe, so the cost is O(pipes x events), not O(chunks).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <vector>

#include "tensorhub/sim/network.hpp"

namespace tensorhub::sim {

class Fluid {
 public:
  using Callback = std::function<void()>;

  // `lag`: bytes a pipe trails its upstream (the chunk size).
  Fluid(Network& net, double lag);

  double now() const { return now_; }
  // `node` holds [begin, end) from the start (a publisher's shard, a stored copy).
  void hold(std::uint32_t node, double begin, double end);
  // Reads [begin, end) from `src` into `dst`; `src` must hold or be receiving every byte of it.
  // `done` runs (at the virtual time the last byte arrives) once the whole range is in.
  void read(std::uint32_t src, std::uint32_t dst, double begin, double end, Callback done);
  // `node` holds or is receiving every byte of [begin, end) (what read() requires of a source).
  bool covers(std::uint32_t node, double begin, double end) const { return spans(node, begin, end, false); }
  // `node` has every byte of [begin, end) already (held, or its pipes into it are done).
  bool holds(std::uint32_t node, double begin, double end) const { return spans(node, begin, end, true); }
  // Runs `f` at virtual time `t` (>= now).
  void at(double t, Callback f);
  // Runs until no pipe and no timer is left. Throws ContractViolation on a stall (active pipes,
  // none can move, no timer).
  void run();

  std::uint64_t events() const { return events_; }
  std::uint64_t pipes() const { return pipes_.size(); }

 private:
  struct Pipe {
    std::uint32_t src = 0, dst = 0;
    double begin = 0, end = 0, pos = 0;  // pos: bytes moved, relative to begin
    int up = -1;                         // upstream pipe into src covering [begin, end)
    std::vector<int> links;
    double rate = 0;
    bool done = false;
    int read = -1;  // the read it belongs to
  };
  struct Seg {
    double end = 0;
    int pipe = -1;  // -1: held
  };
  struct Read {
    std::uint32_t left = 0;
    Callback done;
  };

  // Segments of `node` cover [begin, end) without a gap (and, `finished_only`, are all held).
  bool spans(std::uint32_t node, double begin, double end, bool finished_only) const;
  double avail(const Pipe& p) const;
  bool upstream_moving_inside(const Pipe& p) const;
  void compute_rates();
  double next_dt() const;
  void advance(double dt);

  Network& net_;
  double lag_;
  double now_ = 0;
  std::uint64_t events_ = 0;
  std::vector<Pipe> pipes_;
  std::vector<int> active_;
  std::vector<Read> reads_;
  std::vector<std::map<double, Seg>> cover_;  // per node: begin -> segment
  std::multimap<double, Callback> timers_;
  // scratch of compute_rates
  std::vector<int> link_cnt_;
  std::vector<double> link_rem_;
  std::vector<std::vector<int>> link_pipes_;
  std::vector<int> touched_;
};

}  // namespace tensorhub::sim
