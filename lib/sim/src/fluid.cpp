#include "tensorhub/sim/fluid.hpp"

#include <algorithm>
#include <limits>

#include "tensorhub/core/error.hpp"

namespace tensorhub::sim {
namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();
double eps_for(double bytes) { return 1e-9 * std::max(bytes, 1.0) + 1e-6; }
}  // namespace

Fluid::Fluid(Network& net, double lag) : net_(net), lag_(lag), cover_(net.nodes()) {
  if (!(lag >= 0)) throw ContractViolation("sim: negative pipe lag");
  link_cnt_.assign(net.links().size(), 0);
  link_rem_.assign(net.links().size(), 0);
  link_pipes_.resize(net.links().size());
}

void Fluid::hold(std::uint32_t node, double begin, double end) {
  if (!(end > begin)) throw ContractViolation("sim: empty held range");
  cover_.at(node)[begin] = Seg{end, -1};
}

void Fluid::at(double t, Callback f) { timers_.emplace(std::max(t, now_), std::move(f)); }

bool Fluid::spans(std::uint32_t node, double begin, double end, bool finished_only) const {
  const auto& cov = cover_.at(node);
  double x = begin;
  while (x < end - eps_for(end)) {
    auto it = cov.upper_bound(x + eps_for(x));
    if (it == cov.begin()) return false;
    --it;
    if (it->second.end <= x + eps_for(x)) return false;
    if (finished_only && it->second.pipe >= 0 && !pipes_[static_cast<std::size_t>(it->second.pipe)].done) return false;
    x = it->second.end;
  }
  return true;
}

void Fluid::read(std::uint32_t src, std::uint32_t dst, double begin, double end, Callback done) {
  if (!(end > begin)) throw ContractViolation("sim: empty read");
  const int rid = static_cast<int>(reads_.size());
  reads_.push_back(Read{0, std::move(done)});
  const auto& cov = cover_.at(src);
  double x = begin;
  while (x < end - eps_for(end)) {
    auto it = cov.upper_bound(x + eps_for(x));
    if (it == cov.begin()) throw ContractViolation("sim: source does not hold the range it is read from");
    --it;
    if (it->second.end <= x + eps_for(x))
      throw ContractViolation("sim: source does not hold the range it is read from");
    Pipe p;
    p.src = src;
    p.dst = dst;
    p.begin = x;
    p.end = std::min(end, it->second.end);
    const int up = it->second.pipe;
    p.up = (up >= 0 && !pipes_[up].done) ? up : -1;
    p.links = net_.path(src, dst);
    p.read = rid;
    const int id = static_cast<int>(pipes_.size());
    cover_.at(dst)[p.begin] = Seg{p.end, id};
    x = p.end;
    pipes_.push_back(std::move(p));
    active_.push_back(id);
    ++reads_[rid].left;
  }
}

// Bytes (relative to begin) the pipe may have moved by now.
double Fluid::avail(const Pipe& p) const {
  const double total = p.end - p.begin;
  if (p.up < 0) return total;
  const Pipe& u = pipes_[p.up];
  const double ua = u.begin + u.pos;
  if (u.done || ua >= p.end - eps_for(p.end)) return total;
  return std::clamp(ua - lag_ - p.begin, 0.0, total);
}

// The upstream grows this pipe's avail (it delivered the first chunk, not yet the end).
bool Fluid::upstream_moving_inside(const Pipe& p) const {
  if (p.up < 0) return false;
  const Pipe& u = pipes_[p.up];
  const double ua = u.begin + u.pos;
  return !u.done && ua - lag_ > p.begin - eps_for(p.begin + lag_) && ua < p.end - eps_for(p.end);
}

void Fluid::compute_rates() {
  // Which pipes follow their upstream (caught up) and which cannot move at all.
  const std::size_t n = active_.size();
  std::vector<char> caught(n, 0), zero(n, 0), frozen(n, 0);
  std::vector<int> slot(pipes_.size(), -1);
  for (std::size_t i = 0; i < n; ++i) slot[active_[i]] = static_cast<int>(i);
  for (std::size_t i = 0; i < n; ++i) {
    Pipe& p = pipes_[active_[i]];
    const double a = avail(p);
    if (p.pos >= a - eps_for(a) && a < p.end - p.begin) {
      p.pos = std::min(p.pos, a);
      caught[i] = 1;
    }
  }
  // zero: caught and the upstream cannot grow avail (before its first chunk, or itself zero).
  // Resolved along the chain; chains are acyclic (a pipe's upstream was created before it).
  std::vector<int> order(active_.begin(), active_.end());
  std::sort(order.begin(), order.end());
  for (int id : order) {
    const int i = slot[id];
    if (!caught[i]) continue;
    const Pipe& p = pipes_[id];
    if (!upstream_moving_inside(p)) {
      zero[i] = 1;
      continue;
    }
    const int ui = slot[p.up];
    if (ui >= 0 && zero[ui]) zero[i] = 1;
  }
  std::vector<std::vector<int>> deps(n);
  touched_.clear();
  std::size_t unfrozen = 0;
  for (std::size_t i = 0; i < n; ++i) {
    Pipe& p = pipes_[active_[i]];
    p.rate = 0;
    if (zero[i]) {
      frozen[i] = 1;
      continue;
    }
    if (caught[i]) deps[slot[p.up]].push_back(static_cast<int>(i));
    ++unfrozen;
    for (int l : p.links) {
      if (link_cnt_[l] == 0 && link_pipes_[l].empty()) {
        touched_.push_back(l);
        link_rem_[l] = net_.links()[l].capacity;
      }
      ++link_cnt_[l];
      link_pipes_[l].push_back(static_cast<int>(i));
    }
  }
  std::vector<int> stack;
  auto freeze = [&](int i0, double r) {
    stack.push_back(i0);
    while (!stack.empty()) {
      const int i = stack.back();
      stack.pop_back();
      if (frozen[i]) continue;
      frozen[i] = 1;
      --unfrozen;
      Pipe& p = pipes_[active_[i]];
      p.rate = r;
      for (int l : p.links) {
        link_rem_[l] -= r;
        --link_cnt_[l];
      }
      for (int d : deps[i]) stack.push_back(d);
    }
  };
  while (unfrozen > 0) {
    double level = kInf;
    for (int l : touched_) {
      if (link_cnt_[l] > 0) level = std::min(level, std::max(0.0, link_rem_[l]) / link_cnt_[l]);
    }
    if (level == kInf) throw ContractViolation("sim: a pipe without links");
    for (int l : touched_) {
      if (link_cnt_[l] == 0) continue;
      if (std::max(0.0, link_rem_[l]) / link_cnt_[l] <= level * (1 + 1e-12)) {
        for (int i : link_pipes_[l]) {
          if (!frozen[i]) freeze(i, level);
        }
      }
    }
  }
  for (int l : touched_) {
    link_cnt_[l] = 0;
    link_pipes_[l].clear();
  }
}

double Fluid::next_dt() const {
  double dt = timers_.empty() ? kInf : timers_.begin()->first - now_;
  for (int id : active_) {
    const Pipe& p = pipes_[id];
    const double total = p.end - p.begin;
    const double a = avail(p);
    const bool grows = upstream_moving_inside(p);
    const double arate = grows ? pipes_[p.up].rate : 0.0;
    if (p.rate > 0) {
      if (a >= total) {
        dt = std::min(dt, (total - p.pos) / p.rate);
      } else if (p.rate > arate * (1 + 1e-12) && a - p.pos > eps_for(a)) {
        dt = std::min(dt, (a - p.pos) / (p.rate - arate));
      }
    }
    if (p.up >= 0 && !pipes_[p.up].done) {
      const Pipe& u = pipes_[p.up];
      const double ua = u.begin + u.pos;
      if (u.rate > 0) {
        if (ua < p.end - eps_for(p.end)) dt = std::min(dt, (p.end - ua) / u.rate);
        if (ua < p.begin + lag_ - eps_for(p.begin + lag_)) dt = std::min(dt, (p.begin + lag_ - ua) / u.rate);
      }
    }
  }
  return std::max(dt, 0.0);
}

void Fluid::advance(double dt) {
  auto& links = net_.links();
  for (int id : active_) {
    Pipe& p = pipes_[id];
    if (p.rate <= 0) continue;
    const double moved = std::min(p.rate * dt, p.end - p.begin - p.pos);
    p.pos += moved;
    for (int l : p.links) links[l].bytes += moved;
  }
  now_ += dt;
}

void Fluid::run() {
  while (!active_.empty() || !timers_.empty()) {
    ++events_;
    compute_rates();
    const double dt = next_dt();
    if (dt == kInf) throw ContractViolation("sim: stalled (pipes left, none can move, no timer)");
    advance(dt);
    // Finished pipes, in creation order (upstreams first).
    std::vector<int> finished;
    std::vector<int> still;
    for (int id : active_) {
      Pipe& p = pipes_[id];
      const double total = p.end - p.begin;
      if (p.pos >= total - eps_for(total) && avail(p) >= total) {
        p.pos = total;
        p.done = true;
        finished.push_back(id);
      } else {
        still.push_back(id);
      }
    }
    active_ = std::move(still);
    std::vector<Callback> calls;
    for (int id : finished) {
      Read& r = reads_[pipes_[id].read];
      if (--r.left == 0 && r.done) calls.push_back(std::move(r.done));
    }
    while (!timers_.empty() && timers_.begin()->first <= now_) {
      calls.push_back(std::move(timers_.begin()->second));
      timers_.erase(timers_.begin());
    }
    for (auto& c : calls) c();
  }
}

}  // namespace tensorhub::sim
