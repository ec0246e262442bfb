// The fixture of the PullEngine tests over transport::LocalTransport with an in-process
// coord::Coordinator as their Client (test_pull_engine.cpp, test_pull_engine_checks.cpp):
// publishing and reading fake workers in this process, two publishers of a 2-rank group with
// tensors of awkward sizes.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "local/local_transport.hpp"
#include "tensorhub/coord/coordinator.hpp"
#include "tensorhub/core/manifest.hpp"
#include "tensorhub/transfer/pull_engine.hpp"

namespace tensorhub::transfer::engine_test {

using coord::Coordinator;
using coord::CoordinatorConfig;
using coord::WorkerId;

inline constexpr std::uint64_t kChunk = 4096;

struct TensorDef {
  std::string name;
  std::uint64_t bytes;
};

inline std::vector<unsigned char> pattern(std::uint64_t bytes, unsigned seed) {
  std::vector<unsigned char> v(bytes);
  for (std::uint64_t i = 0; i < bytes; ++i) v[i] = static_cast<unsigned char>((i * 131 + seed * 17 + i / 509) & 0xff);
  return v;
}

inline WorkerId register_local(Coordinator& c, const transport::LocalTransport& t) {
  coord::WorkerInfo w;
  w.endpoint = t.endpoint();
  w.transport = std::string(t.name());
  w.host = "host0";
  return c.register_worker(w);
}

// A publishing worker: owns host buffers, exposes them and publishes one shard.
struct Publisher {
  Publisher(Coordinator& c, const std::string& name) : transport(name), id(register_local(c, transport)) {}

  // Fills buffers with a per-tensor pattern, exposes them and publishes shard `group.rank`.
  coord::PublishReply publish(Coordinator& c, const std::string& model, std::uint64_t version,
                              const coord::Group& group, const std::vector<TensorDef>& defs) {
    std::vector<Tensor> tensors;
    std::vector<transport::MemoryRange> ranges;
    for (const auto& d : defs) {
      buffers.push_back(pattern(d.bytes, static_cast<unsigned>(buffers.size() + 10 * group.rank + 1)));
      tensors.push_back(host_tensor(d.name, DType::kU8, {static_cast<std::int64_t>(d.bytes)}, buffers.back().data()));
      ranges.push_back(transport::MemoryRange{buffers.back().data(), d.bytes, MemoryKind::kHost});
    }
    exposure = transport.expose(ranges);
    EXPECT_EQ(exposure->descriptors().size(), defs.size());
    coord::PublishRequest r;
    r.worker = id;
    r.model = model;
    r.version = version;
    r.chunk_bytes = kChunk;
    r.group = group;
    r.shard = describe_shard(group.rank, tensors, kChunk);
    r.regions = exposure->descriptors();
    return c.publish(r);
  }

  std::vector<unsigned char>& buffer(const std::string& name, const std::vector<TensorDef>& defs) {
    for (std::size_t i = 0; i < defs.size(); ++i) {
      if (defs[i].name == name) return buffers.at(i);
    }
    throw std::out_of_range(name);
  }

  transport::LocalTransport transport;
  WorkerId id;
  std::vector<std::vector<unsigned char>> buffers;  // in publish order
  std::unique_ptr<transport::Exposure> exposure;
};

// A reading worker: resolves, allocates destinations, offers them as relay sources, pulls.
struct Reader {
  Reader(Coordinator& c, const std::string& name) : transport(name), id(register_local(c, transport)), name_(name) {}

  void resolve(Coordinator& c, const std::string& model) {
    manifest = *c.resolve(coord::ResolveRequest{id, model, std::nullopt, coord::Group{name_, 1, 0}, 0}).manifest;
    buffers.clear();
    for (const auto& t : manifest.tensors) buffers.emplace_back(t.spec.bytes(), 0xEE);
  }

  void offer(Coordinator& c, const std::vector<std::uint32_t>& tensors) {
    std::vector<transport::MemoryRange> ranges;
    for (const auto t : tensors) ranges.push_back(transport::MemoryRange{buffers[t].data(), buffers[t].size()});
    exposure = transport.expose(ranges);
    std::vector<std::string> regions(manifest.tensors.size());
    for (std::size_t i = 0; i < tensors.size(); ++i) regions[tensors[i]] = exposure->descriptors()[i];
    c.offer_relay(coord::RelayOffer{id, manifest.model, manifest.version, regions, ""});
  }

  // Pulls `tensors` (all when empty); offers them for relay first when options.relay is set.
  PullStats pull(Coordinator& c, const std::string& model, EngineOptions options = {},
                 std::vector<std::uint32_t> tensors = {}) {
    resolve(c, model);
    if (tensors.empty()) {
      for (std::uint32_t t = 0; t < manifest.tensors.size(); ++t) tensors.push_back(t);
    }
    if (options.relay) offer(c, tensors);
    std::vector<Destination> dests;
    for (const auto t : tensors) dests.push_back(Destination{t, buffers[t].data()});
    PullEngine engine(c, transport, id);
    return engine.run(manifest, dests, options);
  }

  void finish(Coordinator& c) {
    c.finish(coord::FinishRequest{id, manifest.model, manifest.version, coord::Group{name_, 1, 0}, 0});
  }

  const std::vector<unsigned char>& tensor(const std::string& name) const { return buffers.at(*manifest.find(name)); }

  transport::LocalTransport transport;
  WorkerId id;
  Manifest manifest;
  std::vector<std::vector<unsigned char>> buffers;  // indexed like manifest.tensors
  std::unique_ptr<transport::Exposure> exposure;

 private:
  std::string name_;
};

// Pins held on the version by in-flight reads (excludes reading-group pins).
inline std::uint32_t read_pins(Coordinator& c, const std::string& model, std::uint64_t version,
                               std::uint32_t group_pins) {
  for (const auto& m : c.status()) {
    for (const auto& v : m.versions) {
      if (m.model == model && v.version == version) return v.pins - group_pins;
    }
  }
  ADD_FAILURE() << model << " v" << version << " not in status()";
  return 0;
}

// Two publishers (a 2-rank group) with tensors of awkward sizes: several chunks with a short
// tail, exactly one chunk, less than a chunk.
inline const std::vector<TensorDef> kShard0{{"embed", 3 * kChunk + 123}, {"norm", 256}};
inline const std::vector<TensorDef> kShard1{{"layer.0.w", 2 * kChunk}, {"layer.0.b", kChunk}, {"head", 5 * kChunk + 1}};

inline std::uint64_t total(const std::vector<TensorDef>& a, const std::vector<TensorDef>& b = {}) {
  std::uint64_t n = 0;
  for (const auto& d : a) n += d.bytes;
  for (const auto& d : b) n += d.bytes;
  return n;
}

class PullEngineTest : public ::testing::Test {
 protected:
  explicit PullEngineTest(std::uint32_t k = 2)
      : coord_(CoordinatorConfig{k, 64}), p0_(coord_, "pub0"), p1_(coord_, "pub1") {}

  void publish_two_shards() {
    ASSERT_FALSE(p0_.publish(coord_, "m", 1, {"trainer", 2, 0}, kShard0).committed);
    ASSERT_TRUE(p1_.publish(coord_, "m", 1, {"trainer", 2, 1}, kShard1).committed);
  }

  void expect_identical(const Reader& r, const std::vector<std::string>& names) {
    for (const auto& n : names) {
      const auto& src = n == "embed" || n == "norm" ? p0_.buffer(n, kShard0) : p1_.buffer(n, kShard1);
      EXPECT_TRUE(r.tensor(n) == src) << "tensor " << n << " differs";
    }
  }

  Coordinator coord_;
  Publisher p0_;
  Publisher p1_;
};

class PullEngineK1Test : public PullEngineTest {
 protected:
  PullEngineK1Test() : PullEngineTest(1) {}
};

}  // namespace tensorhub::transfer::engine_test
