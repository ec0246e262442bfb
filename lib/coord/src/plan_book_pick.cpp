// PlanBook::plan: one reader's plan call (rules: plan_book.hpp).
#include <algorithm>
#include <string>

#include "tensorhub/coord/plan_book.hpp"
#include "tensorhub/coord/planner.hpp"

namespace tensorhub::coord {

class PlanBook::Call {
 public:
  Call(PlanBook& book, const PlanView& view, WorkerId reader, std::span<const WorkerId> exclude)
      : b_(book), view_(view), v_(view.version), reader_(reader), exclude_(exclude), me_(view.workers.at(reader)) {
    loc_[2] = b_.intern(2, me_.dc);
    loc_[1] = b_.intern(1, me_.dc + '\x1f' + me_.rack);
    loc_[0] = b_.intern(0, me_.dc + '\x1f' + me_.rack + '\x1f' + me_.host);
    auto& rp = b_.readers_[reader];
    if (rp.parent.empty()) {
      rp.parent.assign(b_.stripes_.size(), 0);
      rp.wan.assign(b_.stripes_.size(), 0);
      rp.host.assign(b_.stripes_.size(), 0);
      rp.first = view.now;
    }
    rail_ = b_.rail_of(me_);
    rp_ = &rp;
    const Holder* h = v_.find_holder(reader);
    relay_ = h != nullptr && !h->origin && !h->withdrawn && !h->withdraw_deferred ? h : nullptr;
    decided_.assign(b_.stripes_.size(), Decision{});
  }

  Result run(std::span<const ChunkRange> wanted) {
    Result out;
    for (const auto& r : wanted) {
      std::uint32_t first = r.first;
      const std::uint32_t end = r.first + r.count;
      auto s = stripe_of(first);
      while (first < end) {
        const auto& st = b_.stripes_[s];
        const std::uint32_t piece_end = std::min(end, st.first + st.count);
        const ChunkRange piece{first, piece_end - first};
        const auto& d = decide(s);
        if (d.kind == Kind::kOk) {
          add_step(out.steps, piece, d.holder);
        } else {
          add_range(d.kind == Kind::kWait ? out.waiting : out.unavailable, piece);
        }
        first = piece_end;
        ++s;
      }
    }
    for (const auto& step : out.steps) {
      if (rp_->pinned.insert(step.holder).second) out.new_pins.push_back(step.holder);
    }
    if (seed_) out.seed_dc = me_.dc;
    return out;
  }

 private:
  enum class Kind : std::uint8_t { kUnknown, kOk, kWait, kUnavailable };
  enum class Use : std::uint8_t { kOk, kSkip, kFailed, kGone };
  struct Decision {
    Kind kind = Kind::kUnknown;
    WorkerId holder = 0;
  };

  std::size_t stripe_of(std::uint32_t chunk) const {
    const auto it = std::upper_bound(b_.stripes_.begin(), b_.stripes_.end(), chunk,
                                     [](std::uint32_t c, const ChunkRange& r) { return c < r.first; });
    return static_cast<std::size_t>(it - b_.stripes_.begin()) - 1;
  }

  static void add_range(std::vector<ChunkRange>& out, ChunkRange r) {
    if (!out.empty() && out.back().first + out.back().count == r.first) {
      out.back().count += r.count;
    } else {
      out.push_back(r);
    }
  }
  static void add_step(std::vector<Piece>& out, ChunkRange r, WorkerId holder) {
    if (!out.empty() && out.back().holder == holder && out.back().range.first + out.back().range.count == r.first) {
      out.back().range.count += r.count;
    } else {
      out.push_back(Piece{r, holder});
    }
  }

  Use use(WorkerId holder) const {
    const Holder* h = v_.find_holder(holder);
    if (h == nullptr || view_.workers.count(holder) == 0) return Use::kGone;
    if (std::find(exclude_.begin(), exclude_.end(), holder) != exclude_.end()) return Use::kFailed;
    if (v_.failed(reader_, holder) || !v_.may_serve(*h, reader_)) return Use::kFailed;
    if (view_.suspect && view_.suspect(holder)) return Use::kSkip;
    return Use::kOk;
  }

  // `x` is planned below the reader in stripe `s` (walks up x's parents).
  bool below_me(WorkerId x, std::size_t s) const {
    const auto mine = b_.members_.find(reader_);
    if (mine == b_.members_.end() || !mine->second.in[s]) return false;
    for (std::size_t steps = 0; steps <= b_.readers_.size(); ++steps) {
      const auto it = b_.readers_.find(x);
      if (it == b_.readers_.end() || it->second.parent.size() <= s) return false;
      x = it->second.parent[s];
      if (x == reader_) return true;
      if (x == 0) return false;
    }
    return true;  // a loop above x: not a safe parent
  }

  bool covers(std::size_t s) const {
    if (relay_ == nullptr) return false;
    const auto& st = b_.stripes_[s];
    const auto& chunks = v_.manifest().chunks;
    for (std::uint32_t t = chunks[st.first].tensor; t <= chunks[st.first + st.count - 1].tensor; ++t) {
      if (relay_->regions[t].empty()) return false;
    }
    return true;
  }

  std::optional<WorkerId> pick_local(std::size_t s) {
    std::vector<WorkerId> gone;
    std::optional<WorkerId> found;
    for (int l = 0; l < kLevels && !found; ++l) {
      const auto* set = b_.free_set(l, loc_[l], s);
      if (set == nullptr) continue;
      for (const auto& e : *set) {
        if (e.id == reader_) continue;
        const auto u = use(e.id);
        if (u == Use::kGone) gone.push_back(e.id);
        if (u != Use::kOk || below_me(e.id, s)) continue;
        found = e.id;
        break;
      }
    }
    for (const auto id : gone) b_.drop_member(id);
    return found;
  }

  std::optional<WorkerId> pick_wan(std::size_t s) {
    std::optional<WorkerId> best;
    Entry best_key;
    for (const auto id : b_.stripe_members_[s]) {
      const auto& m = b_.members_.at(id);
      if (m.loc[2] == loc_[2] || m.wan_children[s] > 0 || use(id) != Use::kOk || below_me(id, s)) continue;
      const Entry key{0, static_cast<std::uint8_t>(m.origin ? 2 : (m.join % b_.k_ == s % b_.k_ ? 0 : 1)), m.depth[s],
                      id};
      if (!best || key < best_key) {
        best = id;
        best_key = key;
      }
    }
    return best;
  }

  // Holders of the whole stripe that are no members of it yet join it; returns how many.
  std::size_t scan_holders(std::size_t s) {
    const auto& st = b_.stripes_[s];
    std::size_t added = 0;
    for (const auto& [id, h] : v_.holders()) {
      if (id == reader_ || view_.workers.count(id) == 0) continue;
      const auto m = b_.members_.find(id);
      if (m != b_.members_.end() && m->second.in[s]) continue;
      const auto begin = h.have.begin() + st.first;
      const auto end = begin + st.count;
      if (!h.have[st.first] || !*(end - 1) || std::find(begin, end, std::uint8_t{0}) != end) continue;
      auto& mem = b_.add_member(view_, id, h.origin, b_.k_);
      b_.join_stripe(mem, id, s, h.origin ? 0 : h.depth, b_.k_);
      ++added;
    }
    return added;
  }

  // Some member of the stripe (in the reader's DC only: `local`) may still serve the reader.
  bool any_hope(std::size_t s, bool local) const {
    for (const auto id : b_.stripe_members_[s]) {
      if (id == reader_) continue;
      if (local && b_.members_.at(id).loc[2] != loc_[2]) continue;
      const auto u = use(id);
      if (u == Use::kOk || u == Use::kSkip) return true;
    }
    return false;
  }

  void link(std::size_t s, WorkerId holder, bool wan) {
    auto& pm = b_.members_.at(holder);
    rp_->parent[s] = holder;
    rp_->wan[s] = wan ? 1 : 0;
    rp_->host[s] = !wan && b_.rails_.n > 1 && pm.loc[0] == loc_[0] ? 1 : 0;
    if (wan) {
      ++pm.wan_children[s];
      seed_ = true;
    } else if (rp_->host[s]) {
      ++pm.host_children[s];
      b_.update_free(pm, holder, s, b_.k_);
    } else {
      ++pm.children[s];
      b_.update_free(pm, holder, s, b_.k_);
    }
    const std::uint32_t depth = pm.depth[s] + 1;
    if (covers(s)) b_.join_stripe(b_.add_member(view_, reader_, false, b_.k_), reader_, s, depth, b_.k_);
  }

  // Rails: the reader is not stripe `s`'s rail, no member on its host has a free slot in it, a
  // worker of that rail is registered on its host, and it may still join (within Rails::wait
  // of the reader's first plan call).
  bool wait_for_rail(std::size_t s) {
    if (b_.rails_.n <= 1 || rail_ < 0 || static_cast<std::uint32_t>(rail_) == s % b_.rails_.n) return false;
    if (view_.now - rp_->first >= b_.rails_.wait) return false;
    const auto rail = static_cast<std::uint32_t>(s % b_.rails_.n);
    if (view_.host_has_rail && !view_.host_has_rail(me_, rail, b_.rails_.n)) return false;  // none to wait for
    return !pick_host(s);
  }

  // A usable member on the reader's host with a free host slot in stripe `s` (pick_local at
  // level 0 only).
  bool pick_host(std::size_t s) {
    const auto* set = b_.free_set(0, loc_[0], s);
    if (set == nullptr) return false;
    for (const auto& e : *set) {
      if (e.id != reader_ && use(e.id) == Use::kOk && !below_me(e.id, s)) return true;
    }
    return false;
  }

  const Decision& decide(std::size_t s) {
    auto& d = decided_[s];
    if (d.kind != Kind::kUnknown) return d;
    const WorkerId cur = rp_->parent[s];
    if (cur != 0 && b_.members_.count(cur) && use(cur) == Use::kOk) return d = Decision{Kind::kOk, cur};
    if (cur != 0) b_.unlink(reader_, *rp_, s);
    if (wait_for_rail(s)) return d = Decision{Kind::kWait, 0};
    auto pick = pick_local(s);
    if (!pick && !any_hope(s, true) && scan_holders(s) > 0) pick = pick_local(s);
    if (pick) {
      link(s, *pick, false);
      return d = Decision{Kind::kOk, *pick};
    }
    if (any_hope(s, true)) return d = Decision{Kind::kWait, 0};  // local first: wait for the DC's members
    if (const auto wan = pick_wan(s)) {
      link(s, *wan, true);
      return d = Decision{Kind::kOk, *wan};
    }
    return d = Decision{any_hope(s, false) ? Kind::kWait : Kind::kUnavailable, 0};
  }

  PlanBook& b_;
  const PlanView& view_;
  const VersionState& v_;
  WorkerId reader_;
  std::span<const WorkerId> exclude_;
  const WorkerInfo& me_;
  std::uint32_t loc_[kLevels] = {0, 0, 0};
  ReaderPlan* rp_ = nullptr;
  const Holder* relay_ = nullptr;
  std::vector<Decision> decided_;
  bool seed_ = false;
  std::int32_t rail_ = -1;
};

PlanBook::Result PlanBook::plan(const PlanView& view, WorkerId reader, std::span<const ChunkRange> wanted,
                                std::span<const WorkerId> exclude, std::uint32_t k, Rails rails) {
  if (stripes_.empty()) {
    k_ = std::max<std::uint32_t>(k, 1);
    rails_ = rails;
    rails_.n = std::max<std::uint32_t>(rails_.n, 1);
    init(view);
  }
  if (stripes_.empty()) return Result{};
  return Call(*this, view, reader, exclude).run(wanted);
}

}  // namespace tensorhub::coord
