// Reading groups' pulls and their numbering (design: coordinator.hpp, "Reading groups"). Pure
// bookkeeping: which pull each member joins next, which version each open pull resolved, who is
// still active in it and how many pin shares it still holds. The Coordinator applies the pins
// (VersionState::pin_group / unpin_group) and serialises access.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "tensorhub/coord/types.hpp"

namespace tensorhub::coord {

class GroupReads {
 public:
  using Key = std::tuple<std::string, std::string, std::uint64_t>;  // model, group, seq

  struct Read {
    std::uint64_t version = 0;
    std::uint64_t ticket = 0;
    std::uint32_t size = 0;         // the group's size (every member must agree)
    std::uint32_t joined = 0;       // members that resolved it (or gave up their share)
    std::uint32_t shares_left = 0;  // members whose pin share is still held
    std::set<WorkerId> active;      // members that resolved and have not finished
    // Non-empty: the first member found nothing to read (its NotFoundError's text). Every member
    // gets the same error for this pull; no version is pinned and no member is active.
    std::string missing;
  };

  // The pull `worker`'s next resolve for (model, group) joins: its resolves so far + 1.
  std::uint64_t next_seq(const std::string& model, const std::string& group, WorkerId worker) const;
  Read* find(const Key& key);
  // A new open pull, resolved by `worker` (counted as its pull). A pull that found nothing
  // (`read.missing`) keeps no share for `worker`, and is not kept when it is the only member.
  void open(const Key& key, Read read, WorkerId worker);
  // `worker` joins the open pull `key` (active), or gives up its share of it (not active); either
  // way the pull counts as `worker`'s.
  void join(const Key& key, WorkerId worker, bool active);
  // The open pull `worker` finishes: `key` if it is active there, else its oldest active pull of
  // `version` by (model, group) (a client that numbered pulls itself), else nullptr.
  const Key* finishing(const Key& key, WorkerId worker, std::uint64_t version) const;
  // Gives up one pin share of `key` (its finish, a member that will not pull it, a member that
  // went before joining); erases the pull once every share is gone. Returns whether `worker` was
  // active there.
  bool release_share(const Key& key, WorkerId worker);

  // `worker` went: the pulls it is active in, and the open pulls of its groups it would still
  // have joined. forget() then drops its pull counts.
  std::vector<Key> active_in(WorkerId worker) const;
  std::vector<Key> not_joined_by(WorkerId worker) const;
  void forget(WorkerId worker);

 private:
  using MemberKey = std::tuple<std::string, std::string, WorkerId>;  // model, group, worker
  std::map<Key, Read> reads_;
  std::map<MemberKey, std::uint64_t> pulls_;  // each member's resolves (or given-up shares)
};

}  // namespace tensorhub::coord
