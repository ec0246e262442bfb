#include "tensorhub/coord/source_slots.hpp"

#include <iterator>

namespace tensorhub::coord {

bool SourceSlots::serves(WorkerId holder, WorkerId reader) const {
  const auto h = by_holder_.find(holder);
  return h != by_holder_.end() && h->second.count(reader) > 0;
}

std::uint32_t SourceSlots::readers_from(WorkerId holder, const std::string& dc) const {
  const auto h = by_holder_.find(holder);
  if (h == by_holder_.end()) return 0;
  std::uint32_t n = 0;
  for (const auto& [reader, slot] : h->second) n += slot.dc == dc ? 1 : 0;
  return n;
}

std::uint32_t SourceSlots::reads(WorkerId holder, WorkerId reader) const {
  const auto h = by_holder_.find(holder);
  if (h == by_holder_.end()) return 0;
  const auto s = h->second.find(reader);
  return s == h->second.end() ? 0 : s->second.reads;
}

std::vector<WorkerId> SourceSlots::idle_slots_of(WorkerId reader) const {
  std::vector<WorkerId> out;
  for (const auto& [holder, readers] : by_holder_) {
    const auto s = readers.find(reader);
    if (s != readers.end() && s->second.reads == 0) out.push_back(holder);
  }
  return out;
}

void SourceSlots::add_read(WorkerId holder, WorkerId reader, const std::string& reader_dc) {
  auto& slot = by_holder_[holder][reader];
  slot.dc = reader_dc;
  ++slot.reads;
}

bool SourceSlots::end_read(WorkerId holder, WorkerId reader, Clock::time_point now) {
  const auto h = by_holder_.find(holder);
  if (h == by_holder_.end()) return false;
  const auto s = h->second.find(reader);
  if (s == h->second.end() || s->second.reads == 0) return false;  // not counted here: nothing to end
  if (--s->second.reads > 0) return false;
  s->second.idle_since = now;
  if (grace_.count() <= 0) erase(h, reader);
  return true;
}

void SourceSlots::release_if_idle(WorkerId holder, WorkerId reader) {
  const auto h = by_holder_.find(holder);
  if (h == by_holder_.end()) return;
  const auto s = h->second.find(reader);
  if (s != h->second.end() && s->second.reads == 0) erase(h, reader);
}

void SourceSlots::forget_worker(WorkerId worker) {
  by_holder_.erase(worker);
  for (auto h = by_holder_.begin(); h != by_holder_.end();) {
    h->second.erase(worker);
    h = h->second.empty() ? by_holder_.erase(h) : std::next(h);
  }
}

void SourceSlots::expire(Clock::time_point now) {
  for (auto h = by_holder_.begin(); h != by_holder_.end();) {
    auto& readers = h->second;
    for (auto s = readers.begin(); s != readers.end();) {
      if (s->second.reads == 0 && now - s->second.idle_since >= grace_) {
        s = readers.erase(s);
      } else {
        ++s;
      }
    }
    h = readers.empty() ? by_holder_.erase(h) : std::next(h);
  }
}

void SourceSlots::erase(std::map<WorkerId, std::map<WorkerId, Slot>>::iterator holder, WorkerId reader) {
  holder->second.erase(reader);
  if (holder->second.empty()) by_holder_.erase(holder);
}

}  // namespace tensorhub::coord
