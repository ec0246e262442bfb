// Shared fixtures of the coordinator unit tests: workers, shards, publish/resolve/acquire helpers.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <future>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "tensorhub/coord/coordinator.hpp"
#include "tensorhub/core/error.hpp"

namespace tensorhub::coord {

// Helpers are inline (not in an anonymous namespace): a test file may use only some of them.

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr std::uint64_t kChunk = 4096;
// Generous bound for waits that are expected to succeed; they return as soon as they can.
constexpr auto kLongWait = 10s;

struct TensorDef {
  std::string name;
  std::uint64_t bytes;
};

inline WorkerId add_worker(Coordinator& c, const std::string& name) {
  WorkerInfo w;
  w.endpoint = "local:" + name;
  w.transport = "local";
  w.host = "host0";
  return c.register_worker(w);
}

// The opaque region descriptor a fake worker "exposes" for one of its tensors.
inline std::string region(WorkerId w, const std::string& tensor) {
  return "region:" + std::to_string(w) + ":" + tensor;
}

// A shard of u8 tensors with made-up (but well-formed) checksums; the coordinator never sees bytes.
inline ShardManifest shard_of(std::uint32_t shard, const std::vector<TensorDef>& tensors) {
  ShardManifest s;
  s.shard = shard;
  std::uint64_t sum = 1;
  for (const auto& t : tensors) {
    s.tensors.push_back(TensorSpec{t.name, DType::kU8, {static_cast<std::int64_t>(t.bytes)}});
    s.checksums.emplace_back(chunk_count(t.bytes, kChunk));
    for (auto& x : s.checksums.back()) x = sum++;
  }
  return s;
}

inline PublishRequest request(WorkerId w, const std::string& model, std::uint64_t version, Group group,
                              const std::vector<TensorDef>& tensors) {
  PublishRequest r;
  r.worker = w;
  r.model = model;
  r.version = version;
  r.chunk_bytes = kChunk;
  r.shard = shard_of(group.rank, tensors);
  r.group = std::move(group);
  for (const auto& t : tensors) r.regions.push_back(region(w, t.name));
  return r;
}

// Publishes (model, version) from a single-rank group: one tensor "w" of `bytes` bytes.
inline PublishReply publish_one(Coordinator& c, WorkerId w, const std::string& model, std::uint64_t version,
                                std::uint64_t bytes = 3 * kChunk) {
  return c.publish(request(w, model, version, Group{"trainer", 1, 0}, {{"w", bytes}}));
}

inline ResolveReply resolve(Coordinator& c, WorkerId reader, const std::string& model, Group group = {"readers", 1, 0},
                            std::uint64_t seq = 0, std::optional<std::uint64_t> version = std::nullopt) {
  return c.resolve(ResolveRequest{reader, model, version, std::move(group), seq});
}

inline AcquireReply acquire(Coordinator& c, WorkerId reader, const std::string& model, std::uint64_t version,
                            std::vector<std::uint32_t> chunks, std::uint32_t max_assign = 16) {
  return c.acquire(AcquireRequest{reader, model, version, std::move(chunks), max_assign});
}

// Reports every assignment as read successfully; `now_held` makes the reader a relay holder.
inline void complete_all(Coordinator& c, WorkerId reader, const std::string& model, std::uint64_t version,
                         const std::vector<Assignment>& done, std::vector<std::uint32_t> now_held = {}) {
  CompleteRequest r;
  r.reader = reader;
  r.model = model;
  r.version = version;
  for (const auto& a : done) r.results.push_back(ChunkResult{a.chunk, a.holder, true});
  r.now_held = std::move(now_held);
  c.complete(r);
}

inline std::optional<VersionStatus> version_status(Coordinator& c, const std::string& model, std::uint64_t version) {
  for (const auto& m : c.status()) {
    if (m.model != model) continue;
    for (const auto& v : m.versions) {
      if (v.version == version) return v;
    }
  }
  return std::nullopt;
}

}  // namespace tensorhub::coord
