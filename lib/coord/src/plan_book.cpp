// PlanBook: stripes, members and their free sets, readers' parents and plan pins (design:
// plan_book.hpp). The plan call itself is in plan_book_pick.cpp.
#include "tensorhub/coord/plan_book.hpp"

#include <algorithm>
#include <string>

#include "tensorhub/coord/planner.hpp"

namespace tensorhub::coord {

void PlanBook::init(const PlanView& view) {
  const auto& man = view.version.manifest();
  std::vector<ChunkRange> shards;  // chunk run of each shard (consecutive tensors of one shard)
  std::uint32_t last_shard = UINT32_MAX;
  for (const auto& t : man.tensors) {
    if (t.num_chunks == 0) continue;
    if (!shards.empty() && t.shard == last_shard && shards.back().first + shards.back().count == t.first_chunk) {
      shards.back().count += t.num_chunks;
    } else {
      shards.push_back(ChunkRange{t.first_chunk, t.num_chunks});
    }
    last_shard = t.shard;
  }
  const auto groups = static_cast<std::uint32_t>(std::max<std::size_t>(shards.size(), 1));
  const std::uint32_t per = (kMinStripes + groups - 1) / groups;
  stripes_.clear();
  for (const auto& r : shards) {
    const std::uint32_t parts = std::min(per, r.count);
    std::uint32_t first = r.first;
    for (std::uint32_t i = 0; i < parts; ++i) {
      const std::uint32_t end = r.first + static_cast<std::uint32_t>(std::uint64_t{r.count} * (i + 1) / parts);
      stripes_.push_back(ChunkRange{first, end - first});
      first = end;
    }
  }
  stripe_members_.assign(stripes_.size(), {});
}

std::uint32_t PlanBook::intern(int level, const std::string& key) {
  const auto [it, fresh] = loc_ids_[level].try_emplace(key, static_cast<std::uint32_t>(free_[level].size()));
  if (fresh) {
    free_[level].emplace_back(stripes_.size());
    if (level == kLevels - 1) dc_members_.emplace_back(stripes_.size(), 0);
  }
  return it->second;
}

std::set<PlanBook::Entry>* PlanBook::free_set(int level, std::uint32_t loc, std::size_t s) {
  if (loc >= free_[level].size()) return nullptr;
  return &free_[level][loc][s];
}

PlanBook::Member& PlanBook::add_member(const PlanView& view, WorkerId id, bool origin, std::uint32_t k) {
  (void)k;
  const auto found = members_.find(id);
  if (found != members_.end()) return found->second;
  const auto& info = view.workers.at(id);
  Member m;
  m.loc[2] = intern(2, info.dc);
  m.loc[1] = intern(1, info.dc + '\x1f' + info.rack);
  m.loc[0] = intern(0, info.dc + '\x1f' + info.rack + '\x1f' + info.host);
  m.origin = origin;
  m.rail = rail_of(info);
  m.join = origin ? 0 : joins_++;
  const auto n = stripes_.size();
  m.in.assign(n, 0);
  m.children.assign(n, 0);
  m.host_children.assign(n, 0);
  m.listed.assign(n, 0);
  m.wan_children.assign(n, 0);
  m.depth.assign(n, 0);
  m.entry.assign(n, Entry{});
  return members_.emplace(id, std::move(m)).first->second;
}

void PlanBook::join_stripe(Member& m, WorkerId id, std::size_t s, std::uint32_t depth, std::uint32_t k) {
  if (m.in[s]) return;
  m.in[s] = 1;
  m.depth[s] = depth;
  stripe_members_[s].push_back(id);
  ++dc_members_[m.loc[2]][s];
  update_free(m, id, s, k);
}

std::int32_t PlanBook::rail_of(const WorkerInfo& info) const {
  if (rails_.n <= 1 || info.gpu < 0) return -1;
  return static_cast<std::int32_t>(static_cast<std::uint32_t>(info.gpu) % rails_.n);
}

void PlanBook::update_free(Member& m, WorkerId id, std::size_t s, std::uint32_t k) {
  // Free sets: level 0 (host) lists members with a free child slot on their host, levels 1 and
  // 2 (rack, dc) members with a free slot off it; without rails both are the one `children`.
  const bool split = rails_.n > 1;
  const std::uint8_t want = static_cast<std::uint8_t>(
      (m.in[s] && (split ? m.host_children[s] : m.children[s]) < k ? 1 : 0) | (m.in[s] && m.children[s] < k ? 2 : 0));
  Entry e;
  // The stripe's rail first (rails), then eligible relays, then origins (K > 1: an origin's
  // spare slot, not a relay that is inner in another stripe class, takes the load a
  // not-yet-joined eligible relay would carry), then the other relays.
  e.off_rail = split && !m.origin && m.rail >= 0 && static_cast<std::uint32_t>(m.rail) != s % rails_.n ? 1 : 0;
  e.rank = m.origin ? 1 : (m.join % k == s % k ? 0 : 2);
  e.depth = m.depth[s];
  e.id = id;
  auto& listed = m.listed[s];
  const auto set_level = [&](int l, bool on) {
    if (on) {
      free_[l][m.loc[l]][s].insert(e);
    } else {
      free_[l][m.loc[l]][s].erase(m.entry[s]);
    }
  };
  if (listed != 0 && !(m.entry[s] == e)) {  // the key changed: out of every set first
    for (int l = 0; l < kLevels; ++l) {
      if (listed & (l == 0 ? 1 : 2)) set_level(l, false);
    }
    listed = 0;
  }
  m.entry[s] = e;
  for (int l = 0; l < kLevels; ++l) {
    const std::uint8_t bit = l == 0 ? 1 : 2;
    if ((want & bit) != (listed & bit)) set_level(l, (want & bit) != 0);
  }
  listed = want;
  if (listed == 0) m.entry[s] = Entry{};
}

void PlanBook::drop_member(WorkerId id) {
  const auto it = members_.find(id);
  if (it == members_.end()) return;
  auto& m = it->second;
  for (std::size_t s = 0; s < stripes_.size(); ++s) {
    if (!m.in[s]) continue;
    for (int l = 0; l < kLevels; ++l) {
      if (m.listed[s] & (l == 0 ? 1 : 2)) free_[l][m.loc[l]][s].erase(m.entry[s]);
    }
    std::erase(stripe_members_[s], id);
    --dc_members_[m.loc[2]][s];
  }
  members_.erase(it);
}

void PlanBook::unlink(WorkerId reader, ReaderPlan& rp, std::size_t s) {
  (void)reader;
  const WorkerId p = rp.parent[s];
  if (p == 0) return;
  const auto it = members_.find(p);
  if (it != members_.end()) {
    auto& m = it->second;
    if (rp.wan[s]) {
      if (m.wan_children[s] > 0) --m.wan_children[s];
    } else if (rp.host[s]) {
      if (m.host_children[s] > 0) --m.host_children[s];
      update_free(m, p, s, k_);
    } else if (m.children[s] > 0) {
      --m.children[s];
      update_free(m, p, s, k_);
    }
  }
  rp.parent[s] = 0;
  rp.wan[s] = 0;
  rp.host[s] = 0;
}

bool PlanBook::planned_pair(WorkerId reader, WorkerId holder) const {
  const auto it = readers_.find(reader);
  return it != readers_.end() && it->second.pinned.count(holder) > 0;
}

bool PlanBook::release_source(WorkerId reader, WorkerId holder) {
  const auto it = readers_.find(reader);
  if (it == readers_.end() || it->second.pinned.erase(holder) == 0) return false;
  auto& rp = it->second;
  for (std::size_t s = 0; s < rp.parent.size(); ++s) {
    if (rp.parent[s] == holder) unlink(reader, rp, s);
  }
  return true;
}

std::vector<WorkerId> PlanBook::release_reader(WorkerId reader) {
  const auto it = readers_.find(reader);
  if (it == readers_.end()) return {};
  auto& rp = it->second;
  for (std::size_t s = 0; s < rp.parent.size(); ++s) unlink(reader, rp, s);
  std::vector<WorkerId> pins(rp.pinned.begin(), rp.pinned.end());
  readers_.erase(it);
  return pins;
}

std::vector<WorkerId> PlanBook::forget_worker(WorkerId worker) {
  auto pins = release_reader(worker);
  drop_member(worker);
  return pins;
}

WorkerId PlanBook::parent_of(WorkerId reader, std::size_t s) const {
  const auto it = readers_.find(reader);
  return it == readers_.end() || s >= it->second.parent.size() ? 0 : it->second.parent[s];
}

std::uint32_t PlanBook::children_of(WorkerId holder, std::size_t s) const {
  const auto it = members_.find(holder);
  return it == members_.end() || s >= it->second.children.size() ? 0 : it->second.children[s];
}

}  // namespace tensorhub::coord
