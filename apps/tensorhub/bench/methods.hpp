// The ways of getting one model version from the trainer to every reader that `bench fanout`
// and `bench crossdc` compare, in one SPMD job, on the same buffers:
//   tensorhub  the trainer publishes; every reader Hub::pull()s it at once (readers relay the
//              chunks they hold to later readers: pipelined fan-out)
//   star       the trainer MPI_Isends S to every reader at once
//   bcast      MPI_Bcast of S from the trainer, Open MPI's default algorithm, <= 64 MiB pieces
//   store      a storage service: the trainer sends S to a storage rank (its own host under
//              netsim), which writes an HDF5 snapshot (the project's writer) to its local disk;
//              then, for each reader, it reads the file and sends that reader S
// Ranks: 0 = trainer (and the coordinator), 1..N = readers, the last rank = storage (only when
// `store` is among the methods). Every round uses a fresh version pattern; each reader checks
// the sampled pattern and an xxHash64 digest of all its tensors against the trainer's.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bench/bench_common.hpp"
#include "tensorhub/hub.hpp"
#include "tensorhub/mpi/mpi.hpp"

namespace tensorhub::cli::bench {

enum class Method { kTensorHub, kStar, kBcast, kStore };
std::vector<Method> parse_methods(const std::string& list);  // "tensorhub,star,bcast,store"
std::string method_name(Method m);

struct Layout {
  int world = 0;
  int storage = -1;  // -1: no storage rank
  int readers() const { return world - 1 - (storage >= 0 ? 1 : 0); }
  bool is_reader(int rank) const { return rank > 0 && rank != storage; }
  std::vector<std::string> roles() const;
};
// Throws UserError when the job has no reader.
Layout make_layout(int world, bool with_storage);

// One round of one method, as rank 0 sees it (per reader, in rank order).
struct Round {
  std::string method;
  std::uint64_t version = 0;
  std::vector<int> ranks;
  std::vector<double> seconds;
  std::vector<double> origin_bytes;
  std::vector<double> relay_bytes;
  std::vector<bool> verified;
  std::vector<nlohmann::json> stages;  // per reader, hub pulls only: PullResult's stage seconds
  std::optional<double> trainer_bytes;
  std::string trainer_bytes_source;
  nlohmann::json traffic;  // Counters::stop
  nlohmann::json store;    // storage rank's phases (store only)

  double last() const;
  double mean_seconds() const;
  bool all_verified() const;
  nlohmann::json to_json(const Model& m, std::optional<double> sr) const;
};

// Over several rounds of one method: median last-reader time, mean reader time, mean trainer
// bytes, all verified, and every round.
nlohmann::json summarize(const std::vector<Round>& rounds, const Model& m, std::optional<double> sr);
// The table row for a summary: method, last s, x S/R, mean s, x S/R, trainer MB, trainer/S, verified.
std::vector<std::string> summary_row(const nlohmann::json& summary, std::optional<double> sr);
const std::vector<std::string>& summary_headers();

class FanoutRig {
 public:
  // Collective over MPI_COMM_WORLD: joins the hub and lays out the buffers.
  FanoutRig(const CommonFlags& f, const Model& m, const std::vector<Method>& methods, const std::string& store_dir);
  ~FanoutRig();
  FanoutRig(const FanoutRig&) = delete;
  FanoutRig& operator=(const FanoutRig&) = delete;

  // Collective: one round of `method` carrying the pattern of `version` (unique per round).
  Round run(Method method, std::uint64_t version);
  // Collective: closes the hub (call once, after the last round).
  void close();

  const Layout& layout() const { return layout_; }
  int rank() const { return rank_; }
  Hub& hub() { return *hub_; }

 private:
  double round_trainer(Method method);
  double round_reader(Method method, std::uint64_t version, PullResult& pulled);
  double round_storage(std::vector<double>& phases);

  const Model& model_;
  Layout layout_;
  int rank_ = 0;
  std::string store_path_;
  std::unique_ptr<Hub> hub_;
  std::string trace_;  // --trace: merged at close
  mpi::Comm fan_;      // trainer + readers (for MPI_Bcast)
  std::optional<Arena> arena_;
  std::vector<Arena> store_buffers_;  // storage rank: upload + one per reader
  Counters counters_;
};

}  // namespace tensorhub::cli::bench
