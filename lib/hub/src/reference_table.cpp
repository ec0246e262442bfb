#include "reference_table.hpp"

#include <algorithm>
#include <chrono>
#include <utility>

#include "tensorhub/core/error.hpp"

namespace tensorhub {

std::vector<ByteRange> ranges_of(std::span<const Tensor> tensors) {
  std::vector<ByteRange> out;
  for (const auto& t : tensors) {
    const auto b = reinterpret_cast<std::uintptr_t>(t.data);
    out.push_back(ByteRange{b, b + t.bytes});
  }
  return out;
}

namespace {

bool same(const Reference& r, const std::string& model, std::uint64_t version) {
  return r.model == model && r.version == version;
}

bool holds_all_chunks(const Reference& r, const TensorEntry& e) {
  for (std::uint32_t c = 0; c < e.num_chunks; ++c) {
    if (std::find(r.held.begin(), r.held.end(), e.first_chunk + c) == r.held.end()) return false;
  }
  return true;
}

}  // namespace

bool ReferenceTable::has_origin(const std::string& model, std::uint64_t version) const {
  return std::any_of(refs_.begin(), refs_.end(),
                     [&](const Reference& r) { return r.origin && same(r, model, version); });
}

Reference* ReferenceTable::pending_origin(const std::string& model, std::uint64_t version) {
  for (auto& r : refs_) {
    if (r.origin && r.pending && same(r, model, version)) return &r;
  }
  return nullptr;
}

const Tensor* ReferenceTable::held_tensor(const Manifest& m, const std::string& name) const {
  const auto idx = m.find(name);
  if (!idx) return nullptr;
  for (const auto& r : refs_) {
    if (!same(r, m.model, m.version) || r.pending) continue;
    for (const auto& t : r.tensors) {
      if (t.spec.name != name) continue;
      if (r.origin || holds_all_chunks(r, m.tensors[*idx])) return &t;
    }
  }
  return nullptr;
}

std::shared_ptr<ProgressBytes> ReferenceTable::relay_progress(const std::string& model, std::uint64_t version) const {
  for (const auto& r : refs_) {
    if (!r.origin && same(r, model, version) && r.progress) return r.progress;
  }
  return nullptr;
}

std::vector<Withdrawal> ReferenceTable::relays_overlapping(const std::vector<ByteRange>& ranges, const std::string& why,
                                                           bool publishing) const {
  std::vector<Withdrawal> out;
  for (const auto& r : refs_) {
    // A publish may reuse exactly the range of another version's tensor, nothing else of it.
    const bool shared = publishing && r.origin;
    const bool hit = std::any_of(r.ranges.begin(), r.ranges.end(), [&](const ByteRange& a) {
      return std::any_of(ranges.begin(), ranges.end(),
                         [&](const ByteRange& b) { return a.overlaps(b) && !(shared && a == b); });
    });
    if (!hit) continue;
    if (r.origin) {
      throw UserError(why + ": buffer overlaps memory published as " + vname(r.model, r.version) +
                      (publishing ? " without being the same tensor buffer (a version may reuse another's buffer "
                                    "only whole)"
                                  : "") +
                      "; unpublish it before reusing the memory");
    }
    const bool listed = std::any_of(out.begin(), out.end(),
                                    [&](const Withdrawal& w) { return w.model == r.model && w.version == r.version; });
    if (!listed) out.push_back(Withdrawal{r.model, r.version, false, {}});
  }
  // Every relay of a listed version goes (one holder at the coordinator), with all its tensors.
  for (auto& w : out) {
    for (const auto& r : refs_) {
      if (!r.origin && same(r, w.model, w.version))
        w.tensors.insert(w.tensors.end(), r.tensors.begin(), r.tensors.end());
    }
  }
  return out;
}

std::optional<Withdrawal> ReferenceTable::relays_naming(const std::string& model, std::uint64_t version,
                                                        std::span<const Tensor> names) const {
  std::optional<Withdrawal> w;
  bool named = false;
  for (const auto& r : refs_) {
    if (r.origin || !same(r, model, version)) continue;
    if (!w) w = Withdrawal{model, version, false, {}};
    for (const auto& t : r.tensors) {
      w->tensors.push_back(t);
      named =
          named || std::any_of(names.begin(), names.end(), [&](const Tensor& n) { return n.spec.name == t.spec.name; });
    }
  }
  if (!named) return std::nullopt;
  return w;
}

Withdrawal ReferenceTable::newest() const {
  require(!refs_.empty(), "ReferenceTable::newest of an empty table");
  const auto& last = refs_.back();
  Withdrawal w{last.model, last.version, last.origin, {}};
  for (const auto& r : refs_) {
    if (r.origin == w.origin && same(r, w.model, w.version)) {
      w.tensors.insert(w.tensors.end(), r.tensors.begin(), r.tensors.end());
    }
  }
  return w;
}

void ReferenceTable::remove(const std::string& model, std::uint64_t version, bool origin) {
  take(model, version, origin);  // destroyed here: exposures end
}

std::vector<Reference> ReferenceTable::take(const std::string& model, std::uint64_t version, bool origin) {
  std::vector<Reference> out;
  for (auto it = refs_.begin(); it != refs_.end();) {
    if (it->origin == origin && same(*it, model, version)) {
      out.push_back(std::move(*it));
      it = refs_.erase(it);
    } else {
      ++it;
    }
  }
  return out;
}

void ReferenceTable::withdraw(const std::string& model, std::uint64_t version,
                              std::optional<std::chrono::steady_clock::time_point> until) {
  using Clock = std::chrono::steady_clock;
  const auto self = ctx_.id();
  const auto start = Clock::now();
  auto pins = ctx_.client.unpublish(self, model, version);
  auto next_warning = start + std::chrono::seconds(10);
  // At least one wait_drained: it is what makes the coordinator forget the reference.
  for (bool first = true; first || pins > 0; first = false) {
    auto slice = std::min<std::chrono::milliseconds>(ctx_.options.rpc_deadline / 2, std::chrono::milliseconds(1000));
    if (until) {
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(*until - Clock::now());
      if (!first && left.count() <= 0) {
        throw TimeoutError(
            "unpublish of " + vname(model, version) + ": " + std::to_string(pins) + " read(s) still in flight after " +
            std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count()) +
            " ms; the reference is withdrawn (no new reads) but its memory is still read: keep it "
            "unchanged and unpublish again to wait for the rest");
      }
      slice = std::clamp(left, std::chrono::milliseconds(0), slice);
    }
    pins = ctx_.client.wait_drained(self, model, version, slice);
    if (pins > 0 && Clock::now() > next_warning) {
      ctx_.log.warn("unpublish of " + vname(model, version) + " still waits for " + std::to_string(pins) + " reads");
      next_warning += std::chrono::seconds(10);
    }
  }
}

}  // namespace tensorhub
