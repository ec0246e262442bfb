// One rank's publishes (private header), in two halves so that the checksum pass can run off the
// caller's thread (Hub::publish_async): prepare() checks, lays out and exposes the shard and adds
// it to the ReferenceTable as pending (API mutex held); hash() computes the per-chunk checksums
// in place (no lock: it only reads the tensors); commit() sends the shard to the coordinator and
// makes the reference a published one, or abort() drops it (API mutex held). Copies no tensor
// bytes.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "hub_context.hpp"
#include "reference_table.hpp"
#include "tensorhub/hub.hpp"

namespace tensorhub {

// A publish between prepare() and commit().
struct PublishJob {
  std::string model;
  std::uint64_t version = 0;
  std::vector<Tensor> tensors;
  coord::PublishRequest request;  // the shard laid out; hash() fills its checksums
  unsigned hash_threads = 1;
  std::chrono::steady_clock::time_point started;  // when prepare() began (the publish call)
  PublishResult result;
};

class Publisher {
 public:
  Publisher(HubContext& ctx, ReferenceTable& table) : ctx_(ctx), table_(table) {}

  // The caller has validated the names and stopped relaying whatever overlaps `tensors`.
  // UserError if this rank publishes (model, version) already (pending included).
  PublishJob prepare(const std::string& model, std::uint64_t version, std::span<const Tensor> tensors,
                     const std::optional<Group>& group);
  // Fills job.request.shard's checksums (host tensors on job.hash_threads threads, device
  // tensors on the device); false, sums incomplete, if `cancel` became true.
  bool hash(PublishJob& job, const std::atomic<bool>* cancel) const;
  // Registers the shard at the coordinator; the pending reference becomes a published one.
  void commit(PublishJob& job);
  // Drops the pending reference of a publish that will not commit (its memory detached).
  void abort(const PublishJob& job) noexcept;

 private:
  HubContext& ctx_;
  ReferenceTable& table_;
};

}  // namespace tensorhub
