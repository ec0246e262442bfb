#include "tensorhub/coord/directory.hpp"

#include <utility>

#include "tensorhub/core/error.hpp"
#include "vname.hpp"

namespace tensorhub::coord {

VersionState* Directory::find(const std::string& model, std::uint64_t version) {
  const auto m = models_.find(model);
  if (m == models_.end()) return nullptr;
  const auto v = m->second.find(version);
  return v == m->second.end() ? nullptr : &v->second;
}

const VersionState* Directory::find(const std::string& model, std::uint64_t version) const {
  return const_cast<Directory*>(this)->find(model, version);
}

VersionState& Directory::get(const std::string& model, std::uint64_t version) {
  const auto m = models_.find(model);
  if (m == models_.end()) throw NotFoundError("model '" + model + "' is unknown to the hub");
  const auto v = m->second.find(version);
  if (v == m->second.end()) {
    std::string known;
    for (const auto& [n, s] : m->second) known += (known.empty() ? "" : ", ") + std::to_string(n);
    throw NotFoundError(vname(model, version) +
                        " is not published (known versions: " + (known.empty() ? "none" : known) + ")");
  }
  return v->second;
}

const Directory::Versions& Directory::versions(const std::string& model) const {
  static const Versions kNone;
  const auto m = models_.find(model);
  return m == models_.end() ? kNone : m->second;
}

std::optional<std::uint64_t> Directory::latest(const std::string& model) const {
  const auto& vs = versions(model);
  for (auto it = vs.rbegin(); it != vs.rend(); ++it) {
    if (it->second.readable()) return it->first;
  }
  return std::nullopt;
}

VersionState& Directory::find_or_create(const PublishRequest& r, bool& created) {
  auto& vs = models_[r.model];
  auto it = vs.find(r.version);
  created = it == vs.end();
  if (created) {
    it = vs.emplace(r.version, VersionState(r.model, r.version, r.group.name, r.group.size, r.chunk_bytes)).first;
  }
  return it->second;
}

void Directory::erase(const std::string& model, std::uint64_t version) {
  const auto m = models_.find(model);
  if (m == models_.end()) return;
  m->second.erase(version);
  if (m->second.empty()) models_.erase(m);
}

void Directory::add(VersionState version) {
  const auto model = version.manifest().model;
  const auto n = version.version();
  models_[model].emplace(n, std::move(version));
}

void Directory::drop_if_unused(const std::string& model, std::uint64_t version) {
  const VersionState* v = find(model, version);
  if (v == nullptr) return;
  if (!v->committed() && !v->has_pending()) {
    erase(model, version);  // a publish that all its shards abandoned
  } else if (v->holders().empty() && v->retained() == 0 && v->group_pins() == 0 && !v->has_pending()) {
    if (!v->snapshot().empty()) {
      log_.info("dropped " + vname(model, version) + " (its snapshot " + v->snapshot() + " stays)");
    }
    erase(model, version);
  }
}

}  // namespace tensorhub::coord
