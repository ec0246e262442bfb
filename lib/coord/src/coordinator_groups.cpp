// Coordinator: reading groups (resolve, finish) and their pull numbering (design: coordinator.hpp).
#include <string>

#include "tensorhub/coord/coordinator.hpp"
#include "tensorhub/core/error.hpp"
#include "tensorhub/core/validate.hpp"
#include "vname.hpp"

namespace tensorhub::coord {
namespace {

std::string pull_name(const std::string& group, std::uint64_t seq) {
  return "reading group '" + group + "' pull #" + std::to_string(seq);
}

}  // namespace

ResolveReply Coordinator::resolve(const ResolveRequest& r) {
  validate_name("model name", r.model);
  validate_name("reading group name", r.group.name);
  if (r.group.size == 0 || r.group.size > kMaxGroupSize || r.group.rank >= r.group.size) {
    throw UserError("resolve: bad reading group '" + r.group.name + "' (rank " + std::to_string(r.group.rank) + " of " +
                    std::to_string(r.group.size) + "; at most " + std::to_string(kMaxGroupSize) + " members)");
  }
  std::lock_guard lock(mu_);
  reap();
  alive(r.reader);
  const MemberKey member{r.model, r.group.name, r.reader};
  const auto done = group_pulls_.find(member);
  const std::uint64_t seq = (done == group_pulls_.end() ? 0 : done->second) + 1;
  const GroupKey key{r.model, r.group.name, seq};
  if (const auto g = group_reads_.find(key); g != group_reads_.end()) {
    auto& read = g->second;
    std::string why;
    if (r.group.size != read.size) {
      why = "this rank says the group has " + std::to_string(r.group.size) + " members, the group's first rank said " +
            std::to_string(read.size);
    } else if (r.version && *r.version != read.version) {
      why = "this rank asked for v" + std::to_string(*r.version) + " but the group already resolved v" +
            std::to_string(read.version);
    }
    if (read.joined >= read.size) {
      throw UserError(pull_name(r.group.name, seq) + " already has all its " + std::to_string(read.size) +
                      " members: more workers than the group size use this group name");
    }
    if (!why.empty()) {
      // This member will not pull what its group resolved: its share of the group's pin goes, and
      // the pull counts as consumed for it (its next resolve joins the next pull).
      ++read.joined;
      ++group_pulls_[member];
      release_group_share(key, r.reader);
      throw UserError(pull_name(r.group.name, seq) + ": " + why);
    }
    auto& gv = version_or_throw(r.model, read.version);
    gv.reader_tickets[r.reader] = read.ticket;
    ++read.joined;
    read.active.insert(r.reader);
    ++group_pulls_[member];
    return ResolveReply{gv.manifest(), gv.snapshot, seq};
  }
  std::uint64_t chosen = 0;
  if (r.version) {
    auto& v = version_or_throw(r.model, *r.version);
    if (!v.committed()) throw NotFoundError(vname(r.model, *r.version) + " is not committed yet (shards missing)");
    if (!v.readable()) throw NotFoundError(vname(r.model, *r.version) + " has no live holder for some chunks");
    chosen = *r.version;
  } else {
    const auto l = latest_locked(r.model);
    if (!l) {
      if (!models_.count(r.model)) throw NotFoundError("model '" + r.model + "' is unknown to the hub");
      throw NotFoundError("model '" + r.model + "' has no readable version");
    }
    chosen = *l;
  }
  auto& v = version_or_throw(r.model, chosen);
  v.group_pins += r.group.size;
  const auto ticket = ++ticket_;
  v.reader_tickets[r.reader] = ticket;
  group_reads_.emplace(key, GroupRead{chosen, ticket, r.group.size, 1, r.group.size, {r.reader}});
  ++group_pulls_[member];
  return ResolveReply{v.manifest(), v.snapshot, seq};
}

void Coordinator::finish(const FinishRequest& r) {
  validate_name("model name", r.model);
  validate_name("reading group name", r.group.name);
  std::lock_guard lock(mu_);
  reap();
  alive(r.reader);
  auto g = group_reads_.find(GroupKey{r.model, r.group.name, r.seq});
  if (g == group_reads_.end() || !g->second.active.count(r.reader)) {
    // A client that numbers pulls itself (ResolveRequest::seq, now ignored) may send its own
    // number: take this reader's oldest unfinished pull of that version by this group.
    for (auto it = group_reads_.lower_bound(GroupKey{r.model, r.group.name, 0});
         it != group_reads_.end() && std::get<0>(it->first) == r.model && std::get<1>(it->first) == r.group.name;
         ++it) {
      if (it->second.version == r.version && it->second.active.count(r.reader)) {
        g = it;
        break;
      }
    }
  }
  if (g == group_reads_.end()) {
    throw UserError("finish() without resolve(): " + pull_name(r.group.name, r.seq) + " of model '" + r.model +
                    "' is not open");
  }
  if (!g->second.active.count(r.reader)) {
    throw UserError("finish() by a rank that did not resolve " + pull_name(r.group.name, r.seq));
  }
  release_group_share(g->first, r.reader);
}

void Coordinator::release_group_share(const GroupKey& key, WorkerId reader) {
  auto g = group_reads_.find(key);
  const std::string model = std::get<0>(key);  // `key` may live in the entry erased below
  const auto version = g->second.version;
  const bool was_active = g->second.active.erase(reader) > 0;
  if (VersionState* v = find_version(model, version)) {
    if (was_active) {
      v->reader_tickets.erase(reader);
      v->still_wanted.erase(reader);
    }
    if (v->group_pins > 0) --v->group_pins;
  }
  if (g->second.shares_left > 0 && --g->second.shares_left == 0) group_reads_.erase(g);
  if (was_active) {
    for (const auto holder : slots_.idle_slots_of(reader)) slots_.release_if_idle(holder, reader);
  }
  forget_departed_drained(model, version);
  changed_.notify_all();
}

}  // namespace tensorhub::coord
