#include "grpc_manifest_cache.hpp"

#include <algorithm>

#include "grpc_codec.hpp"
#include "tensorhub/core/error.hpp"

namespace tensorhub::coord {

std::shared_ptr<const ::tensorhub::v1::Manifest> ManifestCache::encoded(
    const std::shared_ptr<const Manifest>& manifest) {
  if (manifest == nullptr) throw ContractViolation("ManifestCache: no manifest");
  {
    std::lock_guard lock(mu_);
    for (auto& e : entries_) {
      if (e.key == manifest) {
        e.used = ++clock_;
        return e.value;
      }
    }
  }
  // Encoded outside the lock: other versions' readers are not held up meanwhile. Two readers of
  // a new version may both encode it; the second result is dropped.
  auto value = std::make_shared<const ::tensorhub::v1::Manifest>(codec::to_proto(*manifest));
  std::lock_guard lock(mu_);
  ++encodings_;
  for (auto& e : entries_) {
    if (e.key == manifest) return e.value;
  }
  if (entries_.size() >= capacity_) {
    entries_.erase(std::min_element(entries_.begin(), entries_.end(),
                                    [](const Entry& a, const Entry& b) { return a.used < b.used; }));
  }
  entries_.push_back(Entry{manifest, value, ++clock_});
  return value;
}

std::uint64_t ManifestCache::encodings() const {
  std::lock_guard lock(mu_);
  return encodings_;
}

}  // namespace tensorhub::coord
