// The coordinator's directory: models -> versions (VersionState), the latest readable version of
// a model, and dropping versions nothing keeps. No locking; the Coordinator serialises access.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "tensorhub/coord/version_state.hpp"
#include "tensorhub/core/log.hpp"

namespace tensorhub::coord {

class Directory {
 public:
  using Versions = std::map<std::uint64_t, VersionState>;

  VersionState* find(const std::string& model, std::uint64_t version);
  const VersionState* find(const std::string& model, std::uint64_t version) const;
  // NotFoundError naming the known versions when absent.
  VersionState& get(const std::string& model, std::uint64_t version);
  bool has_model(const std::string& model) const { return models_.count(model) > 0; }
  // The versions of `model` (empty if unknown).
  const Versions& versions(const std::string& model) const;
  // The newest readable version of `model`.
  std::optional<std::uint64_t> latest(const std::string& model) const;
  // Every version of every model, to update in place (a worker that goes).
  std::map<std::string, Versions>& all() { return models_; }
  const std::map<std::string, Versions>& all() const { return models_; }

  // The version a publish registers its shard in; `created` says whether it is new.
  VersionState& find_or_create(const PublishRequest& request, bool& created);
  void erase(const std::string& model, std::uint64_t version);
  void add(VersionState version);  // cold start from a snapshot (no such version yet)
  // Erases the version if nothing keeps it any more (no holder, not retained, no group pin, no
  // pending shard); an uncommitted one once it has no pending shard.
  void drop_if_unused(const std::string& model, std::uint64_t version);

 private:
  Logger log_{"coord"};
  std::map<std::string, Versions> models_;
};

}  // namespace tensorhub::coord
