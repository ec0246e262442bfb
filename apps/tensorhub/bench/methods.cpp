#include "bench/methods.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <sstream>

#include "common/trace_merge.hpp"
#include "tensorhub/core/manifest.hpp"
#include "tensorhub/snapshot/snapshot.hpp"

namespace tensorhub::cli::bench {
namespace {

constexpr const char* kModel = "bench";
constexpr int kTagStar = 1000;
constexpr int kTagUpload = 2000;
constexpr int kTagDownload = 3000;
// Per rank and round: seconds, verified, origin bytes, relay bytes, the hub pull's stages
// (resolve, transfer, no source, verify), then (storage) its phases.
constexpr std::size_t kFields = 8;

int world_rank() {
  int r = 0;
  mpi::check(MPI_Comm_rank(MPI_COMM_WORLD, &r), "MPI_Comm_rank");
  return r;
}

}  // namespace

std::vector<Method> parse_methods(const std::string& list) {
  std::vector<Method> out;
  std::stringstream in(list);
  std::string name;
  while (std::getline(in, name, ',')) {
    if (name == "tensorhub") {
      out.push_back(Method::kTensorHub);
    } else if (name == "star") {
      out.push_back(Method::kStar);
    } else if (name == "bcast") {
      out.push_back(Method::kBcast);
    } else if (name == "store") {
      out.push_back(Method::kStore);
    } else {
      throw UserError("unknown method '" + name + "' (available: tensorhub, star, bcast, store)");
    }
  }
  if (out.empty()) throw UserError("--methods lists no method");
  return out;
}

std::string method_name(Method m) {
  switch (m) {
    case Method::kTensorHub:
      return "tensorhub";
    case Method::kStar:
      return "star";
    case Method::kBcast:
      return "bcast";
    case Method::kStore:
      return "store";
  }
  return "?";
}

std::vector<std::string> Layout::roles() const {
  std::vector<std::string> r(static_cast<std::size_t>(world), "reader");
  r[0] = "trainer";
  if (storage >= 0) r[static_cast<std::size_t>(storage)] = "storage";
  return r;
}

Layout make_layout(int world, bool with_storage) {
  Layout l;
  l.world = world;
  l.storage = with_storage ? world - 1 : -1;
  if (l.readers() < 1) {
    throw UserError("needs at least " + std::to_string(with_storage ? 3 : 2) + " ranks (trainer, >= 1 reader" +
                    (with_storage ? ", storage" : "") + "); got " + std::to_string(world));
  }
  return l;
}

FanoutRig::FanoutRig(const CommonFlags& f, const Model& m, const std::vector<Method>& methods,
                     const std::string& store_dir)
    : model_(m), rank_(world_rank()), counters_(f, rank_) {
  int world = 0;
  mpi::check(MPI_Comm_size(MPI_COMM_WORLD, &world), "MPI_Comm_size");
  const bool store = std::find(methods.begin(), methods.end(), Method::kStore) != methods.end();
  layout_ = make_layout(world, store);
  const bool storage = rank_ == layout_.storage;
  hub_ = Hub::join(MPI_COMM_WORLD, f.hub.to_options(storage ? 4096 : m.arena_bytes));
  trace_ = f.hub.trace;
  fan_ = mpi::Comm::split(MPI_COMM_WORLD, storage ? MPI_UNDEFINED : 0, rank_);
  if (!storage) {
    arena_.emplace(m.specs, hub_->allocate(m.arena_bytes));
    arena_->clear();  // fault the pages in before any timing
  } else {
    for (int i = 0; i <= layout_.readers(); ++i) {
      store_buffers_.emplace_back(m.specs);
      store_buffers_.back().clear();
    }
    store_path_ =
        (std::filesystem::path(store_dir) / ("tensorhub-bench-store-" + std::to_string(getpid()) + ".h5")).string();
  }
}

FanoutRig::~FanoutRig() {
  if (store_path_.empty()) return;
  std::error_code ec;
  std::filesystem::remove(store_path_ + ".tmp", ec);
  std::filesystem::remove(store_path_, ec);
}

void FanoutRig::close() {
  if (!hub_) return;
  hub_->close();
  merge_job_trace(MPI_COMM_WORLD, trace_);
}

double FanoutRig::round_trainer(Method method) {
  const auto t0 = Clock::now();
  std::vector<MPI_Request> reqs;
  switch (method) {
    case Method::kTensorHub:
      break;  // published before the barrier; the readers pull
    case Method::kStar:
      for (int r = 1; r < layout_.world; ++r) {
        if (layout_.is_reader(r)) isend_pieces(arena_->data(), arena_->bytes(), r, kTagStar, MPI_COMM_WORLD, reqs);
      }
      break;
    case Method::kBcast:
      bcast_pieces(arena_->data(), arena_->bytes(), 0, fan_.get());
      break;
    case Method::kStore:
      isend_pieces(arena_->data(), arena_->bytes(), layout_.storage, kTagUpload, MPI_COMM_WORLD, reqs);
      break;
  }
  wait_all(reqs);
  return seconds_since(t0);
}

double FanoutRig::round_reader(Method method, std::uint64_t version, PullResult& pulled) {
  const auto t0 = Clock::now();
  std::vector<MPI_Request> reqs;
  switch (method) {
    case Method::kTensorHub:
      pulled = hub_->pull(kModel, Version::exact(version), arena_->tensors());
      break;
    case Method::kStar:
      irecv_pieces(arena_->data(), arena_->bytes(), 0, kTagStar, MPI_COMM_WORLD, reqs);
      break;
    case Method::kBcast:
      bcast_pieces(arena_->data(), arena_->bytes(), 0, fan_.get());
      break;
    case Method::kStore:
      irecv_pieces(arena_->data(), arena_->bytes(), layout_.storage, kTagDownload, MPI_COMM_WORLD, reqs);
      break;
  }
  wait_all(reqs);
  return seconds_since(t0);
}

// Upload (receive S), write the snapshot, then per reader: read the file, send it.
double FanoutRig::round_storage(std::vector<double>& phases) {
  const auto t0 = Clock::now();
  Arena& upload = store_buffers_[0];
  std::vector<MPI_Request> reqs;
  irecv_pieces(upload.data(), upload.bytes(), 0, kTagUpload, MPI_COMM_WORLD, reqs);
  wait_all(reqs);
  phases.push_back(seconds_since(t0));
  auto t = Clock::now();
  const auto chunk = std::min<std::uint64_t>(model_.arena_bytes, 4ull << 20);
  const Manifest manifest = assemble_manifest(kModel, 1, chunk, {describe_shard(0, upload.tensors(), chunk)});
  snapshot::write(store_path_, manifest, upload.tensors(), /*overwrite=*/true);
  phases.push_back(seconds_since(t));
  t = Clock::now();
  std::size_t k = 1;
  for (int r = 1; r < layout_.world; ++r) {
    if (!layout_.is_reader(r)) continue;
    Arena& buf = store_buffers_[k++];
    snapshot::read(store_path_, buf.tensors(), /*verify=*/false);
    isend_pieces(buf.data(), buf.bytes(), r, kTagDownload, MPI_COMM_WORLD, reqs);
  }
  phases.push_back(seconds_since(t));  // reading the file N times (sends overlap)
  wait_all(reqs);
  return seconds_since(t0);
}

Round FanoutRig::run(Method method, std::uint64_t version) {
  const bool trainer = rank_ == 0;
  const bool reader = layout_.is_reader(rank_);
  if (trainer) arena_->fill(version);
  if (reader) arena_->clear();
  const std::uint64_t digest = bcast_digest(trainer ? &*arena_ : nullptr, MPI_COMM_WORLD);
  if (trainer && method == Method::kTensorHub) hub_->publish(kModel, version, arena_->tensors());
  counters_.start();
  mpi::sleepy_barrier(MPI_COMM_WORLD);

  std::vector<double> mine(kFields, 0.0);
  PullResult pulled;
  if (trainer) {
    mine[0] = round_trainer(method);
  } else if (reader) {
    mine[0] = round_reader(method, version, pulled);
  } else if (method == Method::kStore) {
    std::vector<double> phases;
    mine[0] = round_storage(phases);
    mine.insert(mine.end(), phases.begin(), phases.end());
  }
  mpi::sleepy_barrier(MPI_COMM_WORLD);  // everyone is done; relays served until here
  Round round;
  round.traffic = counters_.stop(MPI_COMM_WORLD);
  if (trainer && method == Method::kTensorHub) hub_->unpublish(kModel, version);
  if (reader) {
    mine[1] = arena_->matches(version) && arena_digest(*arena_) == digest ? 1 : 0;
    mine[2] = static_cast<double>(pulled.origin_bytes);
    mine[3] = static_cast<double>(pulled.relay_bytes);
    mine[4] = pulled.resolve_seconds;
    mine[5] = pulled.transfer_seconds;
    mine[6] = pulled.no_source_seconds;
    mine[7] = pulled.verify_seconds;
  }
  const auto rows = gather_rows(MPI_COMM_WORLD, mine);
  if (!trainer) return round;

  round.method = method_name(method);
  round.version = version;
  double origin = 0;
  for (int r = 1; r < layout_.world; ++r) {
    const auto& row = rows[static_cast<std::size_t>(r)];
    if (r == layout_.storage && row.size() == kFields + 3) {
      round.store = {{"seconds", row[0]},
                     {"upload_s", row[kFields]},
                     {"write_s", row[kFields + 1]},
                     {"read_files_s", row[kFields + 2]}};
    }
    if (!layout_.is_reader(r)) continue;
    round.ranks.push_back(r);
    round.seconds.push_back(row[0]);
    round.verified.push_back(row[1] == 1);
    round.origin_bytes.push_back(row[2]);
    round.relay_bytes.push_back(row[3]);
    if (method == Method::kTensorHub) {
      round.stages.push_back(
          {{"resolve_s", row[4]}, {"transfer_s", row[5]}, {"no_source_s", row[6]}, {"verify_s", row[7]}});
    }
    origin += row[2];
  }
  const auto n = static_cast<double>(layout_.readers());
  const auto s = static_cast<double>(model_.arena_bytes);
  const auto& tx = round.traffic["host_tx_bytes"];
  switch (method) {
    case Method::kTensorHub:
      round.trainer_bytes = origin;
      round.trainer_bytes_source = "bytes the readers read from the trainer (PullResult::origin_bytes)";
      break;
    case Method::kStar:
      round.trainer_bytes = n * s;
      round.trainer_bytes_source = "N x S (one copy per reader)";
      break;
    case Method::kBcast:
      if (tx.is_array() && tx[0].is_number()) {
        round.trainer_bytes = tx[0].get<double>();
        round.trainer_bytes_source = "trainer host's uplink tx bytes (wire, incl. TCP/IP headers)";
      } else {
        round.trainer_bytes_source = "not counted: depends on Open MPI's algorithm (no per-host counter here)";
      }
      break;
    case Method::kStore:
      round.trainer_bytes = s;
      round.trainer_bytes_source = "S (one copy to the storage rank)";
      break;
  }
  return round;
}

}  // namespace tensorhub::cli::bench
