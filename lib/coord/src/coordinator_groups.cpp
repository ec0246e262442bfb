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
  if (r.group.size > workers_.size()) {
    // Members that do not exist would never finish: the version would stay pinned for ever.
    throw UserError("resolve: reading group '" + r.group.name + "' of " + std::to_string(r.group.size) +
                    " members, but only " + std::to_string(workers_.size()) + " workers are registered");
  }
  const std::uint64_t seq = groups_.next_seq(r.model, r.group.name, r.reader);
  const GroupReads::Key key{r.model, r.group.name, seq};
  if (const auto* read = groups_.find(key)) {
    if (read->joined >= read->size) {
      throw UserError(pull_name(r.group.name, seq) + " already has all its " + std::to_string(read->size) +
                      " members: more workers than the group size use this group name");
    }
    if (!read->missing.empty()) {
      // The group's first member found nothing for this pull: so does every member, even if a
      // version was published since (the group's next pull sees it, for every member alike).
      const auto missing = read->missing;
      groups_.join(key, r.reader, false);
      release_group_share(key, r.reader);
      throw NotFoundError(pull_name(r.group.name, seq) + ": " + missing + " (when the group's first member asked)");
    }
    std::string why;
    if (r.group.size != read->size) {
      why = "this rank says the group has " + std::to_string(r.group.size) + " members, the group's first rank said " +
            std::to_string(read->size);
    } else if (r.version && *r.version != read->version) {
      why = "this rank asked for v" + std::to_string(*r.version) + " but the group already resolved v" +
            std::to_string(read->version);
    }
    if (!why.empty()) {
      // This member will not pull what its group resolved: its share of the group's pin goes, and
      // the pull counts as consumed for it (its next resolve joins the next pull).
      groups_.join(key, r.reader, false);
      release_group_share(key, r.reader);
      throw UserError(pull_name(r.group.name, seq) + ": " + why);
    }
    auto& gv = directory_.get(r.model, read->version);
    gv.start_pull(r.reader, read->ticket);
    groups_.join(key, r.reader, true);
    return ResolveReply{gv.shared_manifest(), gv.snapshot(), seq};
  }
  std::uint64_t chosen = 0;
  try {
    chosen = choose_version(r);
  } catch (const NotFoundError& e) {
    // The first member decides the group's pull #seq, "nothing yet" included: it is recorded
    // (no pin) so that every member's pull #seq ends the same way.
    GroupReads::Read read;
    read.size = r.group.size;
    read.missing = e.what();
    groups_.open(key, std::move(read), r.reader);
    throw;
  }
  auto& v = directory_.get(r.model, chosen);
  v.pin_group(r.group.size);
  const auto ticket = ++ticket_;
  v.start_pull(r.reader, ticket);
  GroupReads::Read read;
  read.version = chosen;
  read.ticket = ticket;
  read.size = r.group.size;
  groups_.open(key, std::move(read), r.reader);
  return ResolveReply{v.shared_manifest(), v.snapshot(), seq};
}

void Coordinator::finish(const FinishRequest& r) {
  validate_name("model name", r.model);
  validate_name("reading group name", r.group.name);
  std::lock_guard lock(mu_);
  reap();
  alive(r.reader);
  const GroupReads::Key asked{r.model, r.group.name, r.seq};
  // A client that numbers pulls itself (ResolveRequest::seq, now ignored) may send its own
  // number: then its oldest unfinished pull of that version by this group is the one.
  if (const auto* key = groups_.finishing(asked, r.reader, r.version)) {
    release_group_share(*key, r.reader);
    return;
  }
  if (groups_.find(asked) == nullptr) {
    throw UserError("finish() without resolve(): " + pull_name(r.group.name, r.seq) + " of model '" + r.model +
                    "' is not open");
  }
  throw UserError("finish() by a rank that did not resolve " + pull_name(r.group.name, r.seq));
}

std::uint64_t Coordinator::choose_version(const ResolveRequest& r) {
  if (r.version) {
    const auto& v = directory_.get(r.model, *r.version);
    if (!v.committed()) throw NotFoundError(vname(r.model, *r.version) + " is not committed yet (shards missing)");
    if (!v.readable()) throw NotFoundError(vname(r.model, *r.version) + " has no live holder for some chunks");
    return *r.version;
  }
  const auto l = directory_.latest(r.model);
  if (!l) {
    if (!directory_.has_model(r.model)) throw NotFoundError("model '" + r.model + "' is unknown to the hub");
    throw NotFoundError("model '" + r.model + "' has no readable version");
  }
  return *l;
}

void Coordinator::release_group_share(GroupReads::Key key, WorkerId reader) {
  const auto* read = groups_.find(key);
  if (read == nullptr) return;
  if (!read->missing.empty()) {  // nothing pinned, nobody active
    groups_.release_share(key, reader);
    return;
  }
  const auto& model = std::get<0>(key);
  const auto version = read->version;
  const bool was_active = groups_.release_share(key, reader);
  if (VersionState* v = directory_.find(model, version)) {
    if (was_active) v->end_pull(reader);
    v->unpin_group();
  }
  if (was_active) {
    for (const auto holder : slots_.idle_slots_of(reader)) slots_.release_if_idle(holder, reader);
  }
  forget_departed_drained(model, version);
  changed_.notify_all();
}

}  // namespace tensorhub::coord
