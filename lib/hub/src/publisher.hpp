// One rank's publishes (private header): checksum the shard, expose it, register the reference.
// Copies no tensor bytes.
#pragma once

#include <optional>
#include <span>
#include <string>

#include "hub_context.hpp"
#include "reference_table.hpp"
#include "tensorhub/hub.hpp"

namespace tensorhub {

class Publisher {
 public:
  Publisher(HubContext& ctx, ReferenceTable& table) : ctx_(ctx), table_(table) {}

  // Hub::publish. The caller has validated the names and stopped relaying whatever overlaps
  // `tensors`.
  void publish(const std::string& model, std::uint64_t version, std::span<const Tensor> tensors,
               const std::optional<Group>& group);

 private:
  HubContext& ctx_;
  ReferenceTable& table_;
};

}  // namespace tensorhub
