// Coordinator: snapshot file references (attach_snapshot), versions readable from a file after
// their holders left, cold start, the offload lease under concurrent unpublishes, status fields.
#include <atomic>
#include <functional>

#include "coord_test_util.hpp"

namespace tensorhub::coord {
namespace {

using namespace std::chrono_literals;

constexpr const char* kPath = "/snapshots/m/v1.h5";

// The manifest of a committed version, as a reader (or a snapshot writer) sees it.
Manifest manifest_of(Coordinator& c, const std::string& model, std::uint64_t version) {
  const auto reader = add_worker(c, "manifest-reader");
  static std::uint64_t seq = 1000;
  const Group g{"manifest-" + std::to_string(++seq), 1, 0};
  auto m = *resolve(c, reader, model, g, seq, version).manifest;
  c.finish(FinishRequest{reader, model, version, g, seq});
  c.deregister_worker(reader);
  return m;
}

// Publishes (model, version) from a two-rank group: rank 0 tensor "a", rank 1 tensor "b".
void publish_pair(Coordinator& c, WorkerId r0, WorkerId r1, const std::string& model, std::uint64_t version) {
  ASSERT_FALSE(c.publish(request(r0, model, version, {"trainer", 2, 0}, {{"a", 3 * kChunk}})).committed);
  ASSERT_TRUE(c.publish(request(r1, model, version, {"trainer", 2, 1}, {{"b", 2 * kChunk + 10}})).committed);
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// ---- attach to an existing version -----------------------------------------------------------

TEST(CoordinatorSnapshot, UnpublishOfTheLastHolderOfARetainedVersionIsOffloadRequired) {
  Coordinator c;
  const auto p = add_worker(c, "p");
  publish_one(c, p, "m", 1);
  c.retain("m", 1);
  EXPECT_THROW(c.unpublish(p, "m", 1), OffloadRequired);
  EXPECT_EQ(version_status(c, "m", 1)->holders, 1u);  // refused: nothing changed
  EXPECT_EQ(c.latest("m"), 1u);
}

TEST(CoordinatorSnapshot, AttachedVersionStaysReadableFromTheFileAfterItsHoldersLeave) {
  Coordinator c;
  const auto p = add_worker(c, "p");
  const auto r = add_worker(c, "r");
  publish_one(c, p, "m", 1);
  c.retain("m", 1);
  EXPECT_EQ(resolve(c, r, "m", {"readers", 1, 0}, 1).snapshot, "");
  c.finish(FinishRequest{r, "m", 1, {"readers", 1, 0}, 1});

  c.attach_snapshot(kPath, manifest_of(c, "m", 1));
  EXPECT_EQ(version_status(c, "m", 1)->snapshot, kPath);
  // With a snapshot the last holder may go.
  EXPECT_EQ(c.unpublish(p, "m", 1), 0u);
  EXPECT_EQ(c.wait_drained(p, "m", 1, kLongWait), 0u);

  const auto st = version_status(c, "m", 1);
  ASSERT_TRUE(st.has_value());
  EXPECT_TRUE(st->readable);
  EXPECT_EQ(st->holders, 0u);
  EXPECT_EQ(st->snapshot, kPath);
  EXPECT_TRUE(st->holder_list.empty());
  EXPECT_EQ(c.latest("m"), 1u);

  // A reader resolves it, is told about the file, and no holder is assigned.
  const auto rep = resolve(c, r, "m", {"readers", 1, 0}, 2);
  EXPECT_EQ(rep.manifest->version, 1u);
  EXPECT_EQ(rep.snapshot, kPath);
  const auto a = acquire(c, r, "m", 1, {0, 1, 2});
  EXPECT_TRUE(a.assignments.empty());
  EXPECT_EQ(a.unavailable, (std::vector<std::uint32_t>{0, 1, 2}));
  c.finish(FinishRequest{r, "m", 1, {"readers", 1, 0}, 2});
  EXPECT_TRUE(version_status(c, "m", 1).has_value());  // retained: not dropped by finish

  // Released with no holder and no pin: dropped like any other version.
  c.release("m", 1);
  EXPECT_EQ(version_status(c, "m", 1), std::nullopt);
  EXPECT_TRUE(c.status().empty());
}

TEST(CoordinatorSnapshot, AttachRejectsAManifestThatDoesNotMatch) {
  Coordinator c;
  const auto p = add_worker(c, "p");
  const auto q = add_worker(c, "q");
  publish_one(c, p, "m", 1);
  const auto good = manifest_of(c, "m", 1);

  auto bad_sum = good;
  bad_sum.chunks[1].checksum ^= 0xff;
  auto e = error_of([&] { c.attach_snapshot(kPath, bad_sum); });
  EXPECT_TRUE(contains(e, "tensor 'w' chunk 1: checksum")) << e;

  // A snapshot with sums under another algorithm (a format-2 file, XXH64) is not compared sum by
  // sum with the version's XXH3 ones: refused, saying why.
  auto other_algorithm = good;
  other_algorithm.checksum_algorithm =
      good.checksum_algorithm == ChecksumAlgorithm::kXxh64 ? ChecksumAlgorithm::kXxh3_64 : ChecksumAlgorithm::kXxh64;
  e = error_of([&] { c.attach_snapshot(kPath, other_algorithm); });
  EXPECT_TRUE(contains(e, "the checksums cannot be compared")) << e;

  auto bad_shape = assemble_manifest("m", 1, kChunk, {shard_of(0, {{"w", 3 * kChunk}})});
  bad_shape.tensors[0].spec.dtype = DType::kI8;
  e = error_of([&] { c.attach_snapshot(kPath, bad_shape); });
  EXPECT_TRUE(contains(e, "tensor 'w' is u8")) << e;

  const auto other_name = assemble_manifest("m", 1, kChunk, {shard_of(0, {{"x", 3 * kChunk}})});
  e = error_of([&] { c.attach_snapshot(kPath, other_name); });
  EXPECT_TRUE(contains(e, "tensor 'w' is missing")) << e;

  const auto more = assemble_manifest("m", 1, kChunk, {shard_of(0, {{"w", 3 * kChunk}, {"x", 10}})});
  e = error_of([&] { c.attach_snapshot(kPath, more); });
  EXPECT_TRUE(contains(e, "1 tensors, the snapshot 2")) << e;

  auto malformed = good;
  malformed.chunks.pop_back();
  EXPECT_THROW(c.attach_snapshot(kPath, malformed), UserError);
  EXPECT_THROW(c.attach_snapshot("", good), UserError);

  // A version still being published cannot be attached to.
  ASSERT_FALSE(c.publish(request(q, "m", 2, {"trainer", 2, 0}, {{"w", 10}})).committed);
  auto pending = good;
  pending.version = 2;
  EXPECT_THROW(c.attach_snapshot(kPath, pending), UserError);

  // Nothing changed.
  EXPECT_EQ(version_status(c, "m", 1)->snapshot, "");
  c.attach_snapshot(kPath, good);
  EXPECT_EQ(version_status(c, "m", 1)->snapshot, kPath);
}

TEST(CoordinatorSnapshot, AttachAcceptsADifferentShardLayout) {
  Coordinator c;
  const auto r0 = add_worker(c, "r0");
  const auto r1 = add_worker(c, "r1");
  publish_pair(c, r0, r1, "m", 1);
  const auto m = manifest_of(c, "m", 1);
  // Same tensors and bytes, written as one shard in another order (e.g. a resharded save).
  ShardManifest one;
  one.shard = 0;
  for (const auto idx : {1u, 0u}) {
    const auto& e = m.tensors[idx];
    one.tensors.push_back(e.spec);
    one.checksums.emplace_back();
    for (std::uint32_t k = 0; k < e.num_chunks; ++k)
      one.checksums.back().push_back(m.chunks[e.first_chunk + k].checksum);
  }
  const auto file = assemble_manifest("m", 1, kChunk, {one});
  ASSERT_NE(file, m);
  c.attach_snapshot(kPath, file);
  EXPECT_EQ(version_status(c, "m", 1)->snapshot, kPath);
  // The version keeps its own manifest (the holders' chunk numbering).
  EXPECT_EQ(manifest_of(c, "m", 1), m);
}

// ---- cold start ------------------------------------------------------------------------------

TEST(CoordinatorSnapshot, AttachOfAnUnknownVersionCreatesItBackedByTheFile) {
  Coordinator c;
  const auto file = assemble_manifest("m", 4, kChunk, {shard_of(0, {{"w", 2 * kChunk}})});
  c.attach_snapshot("/snap/m/v4.h5", file);
  auto st = version_status(c, "m", 4);
  ASSERT_TRUE(st.has_value());
  EXPECT_TRUE(st->committed);
  EXPECT_TRUE(st->readable);
  EXPECT_EQ(st->holders, 0u);
  EXPECT_EQ(st->retained, 1u);
  EXPECT_EQ(st->bytes, 2 * kChunk);
  EXPECT_EQ(st->snapshot, "/snap/m/v4.h5");
  EXPECT_EQ(c.latest("m"), 4u);
  EXPECT_EQ(c.wait_for("m", 3, 0ms), 4u);

  // A reader reads the file and then relays what it read: the version has a holder again.
  const auto r = add_worker(c, "r");
  const auto rep = resolve(c, r, "m");
  EXPECT_EQ(*rep.manifest, file);
  EXPECT_EQ(rep.snapshot, "/snap/m/v4.h5");
  c.offer_relay(RelayOffer{r, "m", 4, {region(r, "w")}});
  EXPECT_EQ(acquire(c, r, "m", 4, {0, 1}).unavailable.size(), 2u);
  c.complete(CompleteRequest{r, "m", 4, {}, {0, 1}});
  c.finish(FinishRequest{r, "m", 4, {"readers", 1, 0}, 0});
  st = version_status(c, "m", 4);
  EXPECT_EQ(st->holders, 1u);
  const auto r2 = add_worker(c, "r2");
  const auto a2 = acquire(c, r2, "m", 4, {0, 1});
  EXPECT_EQ(a2.assignments.size(), 2u);

  // Publishing it again is refused (versions are immutable), a newer one is fine.
  const auto p = add_worker(c, "p");
  EXPECT_THROW(publish_one(c, p, "m", 4), UserError);
  publish_one(c, p, "m", 5);
  EXPECT_EQ(c.latest("m"), 5u);

  // Released: kept while the relay holds it, dropped when the relay goes.
  c.release("m", 4);
  ASSERT_TRUE(version_status(c, "m", 4).has_value());
  EXPECT_EQ(c.unpublish(r, "m", 4), 2u);  // r2's two reads still pin it
  complete_all(c, r2, "m", 4, a2.assignments);
  EXPECT_EQ(c.wait_drained(r, "m", 4, kLongWait), 0u);
  EXPECT_EQ(version_status(c, "m", 4), std::nullopt);
}

// ---- the offload lease -----------------------------------------------------------------------

TEST(CoordinatorSnapshot, OffloadLeaseGoesToTheFirstAskerOthersWait) {
  Coordinator c;
  const auto r0 = add_worker(c, "r0");
  const auto r1 = add_worker(c, "r1");
  const auto other = add_worker(c, "other");
  publish_pair(c, r0, r1, "m", 1);
  EXPECT_EQ(c.begin_offload(r0, "m", 1).state, OffloadState::kDone);  // not retained
  c.retain("m", 1);
  EXPECT_THROW(c.unpublish(r1, "m", 1), OffloadRequired);
  EXPECT_THROW(c.unpublish(r0, "m", 1), OffloadRequired);

  auto l = c.begin_offload(r1, "m", 1);
  EXPECT_EQ(l.state, OffloadState::kWrite);
  EXPECT_EQ(l.holder, r1);
  l = c.begin_offload(r0, "m", 1);
  EXPECT_EQ(l.state, OffloadState::kWait);
  EXPECT_EQ(l.holder, r1);
  EXPECT_EQ(c.begin_offload(r1, "m", 1).state, OffloadState::kWrite);    // asking again keeps it
  EXPECT_EQ(c.begin_offload(other, "m", 1).state, OffloadState::kDone);  // not a holder
  EXPECT_THROW(c.begin_offload(r0, "m", 9), NotFoundError);

  // A writer that fails gives the lease up; the next asker gets it.
  c.end_offload(r0, "m", 1);  // not the lease holder: no effect
  EXPECT_EQ(c.begin_offload(r0, "m", 1).state, OffloadState::kWait);
  c.end_offload(r1, "m", 1);
  EXPECT_EQ(c.begin_offload(r0, "m", 1).state, OffloadState::kWrite);

  c.attach_snapshot(kPath, manifest_of(c, "m", 1));
  EXPECT_EQ(c.begin_offload(r1, "m", 1).state, OffloadState::kDone);
  EXPECT_EQ(c.unpublish(r1, "m", 1), 0u);
  EXPECT_EQ(c.unpublish(r0, "m", 1), 0u);
  EXPECT_EQ(c.wait_drained(r0, "m", 1, kLongWait), 0u);
  EXPECT_EQ(c.wait_drained(r1, "m", 1, kLongWait), 0u);
  EXPECT_TRUE(version_status(c, "m", 1)->readable);
}

TEST(CoordinatorSnapshot, ALeaseWhoseHolderLeftIsTakenOver) {
  Coordinator c;
  const auto r0 = add_worker(c, "r0");
  const auto r1 = add_worker(c, "r1");
  publish_pair(c, r0, r1, "m", 1);
  c.retain("m", 1);
  ASSERT_EQ(c.begin_offload(r0, "m", 1).state, OffloadState::kWrite);
  ASSERT_EQ(c.begin_offload(r1, "m", 1).state, OffloadState::kWait);
  c.deregister_worker(r0);  // the writer died or left without writing
  // r0's shard is gone, so the version can no longer be written from memory; r1 still gets the
  // lease (its own shard is what it must not drop), and would fail to pull r0's part.
  EXPECT_EQ(c.begin_offload(r1, "m", 1).state, OffloadState::kWrite);
}

TEST(CoordinatorSnapshot, ConcurrentUnpublishesOfAGroupWriteTheSnapshotOnce) {
  constexpr int kRanks = 4;
  Coordinator c;
  std::vector<WorkerId> ranks;
  for (int i = 0; i < kRanks; ++i) ranks.push_back(add_worker(c, "tp" + std::to_string(i)));
  for (int i = 0; i < kRanks; ++i) {
    c.publish(request(ranks[i], "m", 1, {"trainer", kRanks, static_cast<std::uint32_t>(i)},
                      {{"t" + std::to_string(i), 2 * kChunk}}));
  }
  ASSERT_EQ(c.latest("m"), 1u);
  c.retain("m", 1);
  const auto manifest = manifest_of(c, "m", 1);

  std::atomic<int> writes{0};
  std::atomic<int> holders_gone_while_writing{0};
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kRanks; ++i) {
    threads.emplace_back([&, w = ranks[i]] {
      ++ready;
      while (ready.load() < kRanks) std::this_thread::yield();  // all unpublish at once
      const auto give_up = Clock::now() + kLongWait;
      while (Clock::now() < give_up) {
        try {
          c.unpublish(w, "m", 1);
          c.wait_drained(w, "m", 1, kLongWait);
          return;
        } catch (const OffloadRequired&) {
        }
        const auto lease = c.begin_offload(w, "m", 1);
        if (lease.state == OffloadState::kWrite) {
          ++writes;
          // "Writing": every shard must still be held, or the writer could not read it.
          std::this_thread::sleep_for(20ms);
          if (version_status(c, "m", 1)->holders != kRanks) ++holders_gone_while_writing;
          c.attach_snapshot(kPath, manifest);
        } else if (lease.state == OffloadState::kWait) {
          std::this_thread::sleep_for(1ms);
        }
      }
      ADD_FAILURE() << "worker " << w << " never finished unpublishing";
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(writes.load(), 1);
  EXPECT_EQ(holders_gone_while_writing.load(), 0);
  const auto st = version_status(c, "m", 1);
  ASSERT_TRUE(st.has_value());
  EXPECT_EQ(st->holders, 0u);
  EXPECT_TRUE(st->readable);
  EXPECT_EQ(st->snapshot, kPath);
}

// ---- status ----------------------------------------------------------------------------------

TEST(CoordinatorSnapshot, StatusListsEveryHolder) {
  Coordinator c;
  WorkerInfo info;
  info.endpoint = "local:p";
  info.host = "node-7";
  info.rank = 3;
  const auto p = c.register_worker(info);
  const auto r = add_worker(c, "r");
  publish_one(c, p, "m", 1, 3 * kChunk);
  c.offer_relay(RelayOffer{r, "m", 1, {region(r, "w")}});
  const auto a = acquire(c, r, "m", 1, {0, 1});
  ASSERT_EQ(a.assignments.size(), 2u);
  complete_all(c, r, "m", 1, {a.assignments[0]}, {0});

  auto st = version_status(c, "m", 1);
  ASSERT_TRUE(st.has_value());
  ASSERT_EQ(st->holder_list.size(), 2u);
  const auto& origin = st->holder_list[0].worker == p ? st->holder_list[0] : st->holder_list[1];
  const auto& relay = st->holder_list[0].worker == p ? st->holder_list[1] : st->holder_list[0];
  EXPECT_EQ(origin.host, "node-7");
  EXPECT_EQ(origin.rank, 3);
  EXPECT_TRUE(origin.origin);
  EXPECT_FALSE(origin.withdrawn);
  EXPECT_EQ(origin.pins, 1u);
  EXPECT_EQ(origin.chunks_held, 3u);
  EXPECT_EQ(origin.chunks_total, 3u);
  EXPECT_EQ(relay.worker, r);
  EXPECT_EQ(relay.host, "host0");
  EXPECT_FALSE(relay.origin);
  EXPECT_EQ(relay.chunks_held, 1u);
  EXPECT_EQ(relay.chunks_total, 3u);
  EXPECT_EQ(st->snapshot, "");

  // Withdrawn holders stay listed (as withdrawn) until drained; a departed worker loses its host.
  EXPECT_EQ(c.unpublish(p, "m", 1), 1u);
  c.deregister_worker(p);
  st = version_status(c, "m", 1);
  ASSERT_EQ(st->holder_list.size(), 2u);
  EXPECT_EQ(st->holders, 1u);
  for (const auto& h : st->holder_list) {
    if (h.worker != p) continue;
    EXPECT_TRUE(h.withdrawn);
    EXPECT_EQ(h.host, "");
    EXPECT_EQ(h.rank, -1);
  }
}

}  // namespace
}  // namespace tensorhub::coord
