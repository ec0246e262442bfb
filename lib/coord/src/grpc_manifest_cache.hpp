// The wire form of the manifests a coordinator's gRPC service hands out. Every reader of a
// version resolves it, and the manifest is the bulk of the reply (25,600 chunks: about 200 KB):
// encoding it once per version instead of once per reader keeps Resolve's cost independent of
// the manifest's size. Keyed by the coordinator's shared, immutable manifest (ResolveReply::
// manifest); a few recent versions are kept, the least recently used goes first.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "tensorhub.pb.h"
#include "tensorhub/core/manifest.hpp"

namespace tensorhub::coord {

class ManifestCache {
 public:
  explicit ManifestCache(std::size_t capacity = 8) : capacity_(capacity == 0 ? 1 : capacity) {}

  // The encoding of `*manifest` (codec::to_proto), made at most once while it stays cached.
  std::shared_ptr<const ::tensorhub::v1::Manifest> encoded(const std::shared_ptr<const Manifest>& manifest);

  // Encodings made so far (a hit makes none).
  std::uint64_t encodings() const;

 private:
  struct Entry {
    std::shared_ptr<const Manifest> key;  // held: the address stays this manifest's
    std::shared_ptr<const ::tensorhub::v1::Manifest> value;
    std::uint64_t used = 0;
  };
  const std::size_t capacity_;
  mutable std::mutex mu_;
  std::vector<Entry> entries_;
  std::uint64_t clock_ = 0;
  std::uint64_t encodings_ = 0;
};

}  // namespace tensorhub::coord
