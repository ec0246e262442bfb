#include "tensorhub/coord/group_reads.hpp"

#include <utility>

namespace tensorhub::coord {

std::uint64_t GroupReads::next_seq(const std::string& model, const std::string& group, WorkerId worker) const {
  const auto p = pulls_.find(MemberKey{model, group, worker});
  return (p == pulls_.end() ? 0 : p->second) + 1;
}

GroupReads::Read* GroupReads::find(const Key& key) {
  const auto it = reads_.find(key);
  return it == reads_.end() ? nullptr : &it->second;
}

void GroupReads::open(const Key& key, Read read, WorkerId worker) {
  ++pulls_[MemberKey{std::get<0>(key), std::get<1>(key), worker}];
  read.joined = 1;
  read.shares_left = read.size;
  if (read.missing.empty()) {
    read.active = {worker};
  } else if (--read.shares_left == 0) {
    return;  // nobody else will ask for it
  }
  reads_.insert_or_assign(key, std::move(read));
}

void GroupReads::join(const Key& key, WorkerId worker, bool active) {
  auto& read = reads_.at(key);
  ++read.joined;
  if (active) read.active.insert(worker);
  ++pulls_[MemberKey{std::get<0>(key), std::get<1>(key), worker}];
}

const GroupReads::Key* GroupReads::finishing(const Key& key, WorkerId worker, std::uint64_t version) const {
  const auto it = reads_.find(key);
  if (it != reads_.end() && it->second.active.count(worker)) return &it->first;
  const auto& [model, group, seq] = key;
  for (auto r = reads_.lower_bound(Key{model, group, 0});
       r != reads_.end() && std::get<0>(r->first) == model && std::get<1>(r->first) == group; ++r) {
    if (r->second.version == version && r->second.active.count(worker)) return &r->first;
  }
  return nullptr;
}

bool GroupReads::release_share(const Key& key, WorkerId worker) {
  const auto it = reads_.find(key);
  if (it == reads_.end()) return false;
  const bool was_active = it->second.active.erase(worker) > 0;
  if (it->second.shares_left > 0 && --it->second.shares_left == 0) reads_.erase(it);
  return was_active;
}

std::vector<GroupReads::Key> GroupReads::active_in(WorkerId worker) const {
  std::vector<Key> out;
  for (const auto& [key, read] : reads_) {
    if (read.active.count(worker)) out.push_back(key);
  }
  return out;
}

std::vector<GroupReads::Key> GroupReads::not_joined_by(WorkerId worker) const {
  std::vector<Key> out;
  for (const auto& [key, read] : reads_) {
    const auto& [model, group, seq] = key;
    const auto member = pulls_.find(MemberKey{model, group, worker});
    if (member != pulls_.end() && member->second < seq && read.joined < read.size && !read.active.count(worker)) {
      out.push_back(key);
    }
  }
  return out;
}

void GroupReads::forget(WorkerId worker) {
  std::erase_if(pulls_, [worker](const auto& e) { return std::get<2>(e.first) == worker; });
}

}  // namespace tensorhub::coord
