// What the fan-out benchmarks (bench fanout | stall | elastic | crossdc) share: flags, the
// synthetic model, timing, S/R ratios, per-rank result gathering, traffic counters, and the JSON
// header every result file starts with.
//
// S/R: the time one copy of the model (S bytes) takes over one link of R bit/s (--link-mbit).
// Every time is also reported as a multiple of it; without --link-mbit the ratios are null.
#pragma once

#include <mpi.h>

#include <boost/program_options.hpp>
#include <chrono>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/commands.hpp"
#include "common/job.hpp"
#include "common/report.hpp"
#include "common/synthetic.hpp"

namespace tensorhub::cli::bench {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t);
// t0 + seconds.
Clock::time_point at_offset(Clock::time_point t0, double seconds);

// Flags of every fan-out benchmark besides the size sweep (bench/flags.hpp); hub defaults tuned
// for 100 Mbit/s links (chunk 512KiB, max-readers 1, inflight 3).
struct CommonFlags {
  std::uint32_t tensors = 16;
  double link_mbit = 0;        // R; 0 = unknown (ratios to S/R are null)
  std::string json;            // result file
  std::string iface = "auto";  // per-host byte counters: /proc/net/dev of this interface
  std::string counters_cmd;    // run by rank 0 around each phase; prints "key bytes" lines
  HubFlags hub;

  CommonFlags();
  void add_to(boost::program_options::options_description& desc);
  void check() const;  // UserError before MPI starts
};

struct Model {
  std::vector<TensorSpec> specs;
  std::uint64_t bytes = 0;        // S: the tensors' bytes
  std::uint64_t arena_bytes = 0;  // the same tensors laid out page-aligned (what baselines send)
};
// The synthetic model of about `bytes` in f.tensors tensors.
Model make_model(const CommonFlags& f, std::uint64_t bytes);

// S/R in seconds, or nullopt without a link rate.
std::optional<double> sr_seconds(std::uint64_t bytes, double link_mbit);
nlohmann::json ratio_json(std::optional<double> value, std::optional<double> sr);
std::string ratio_text(std::optional<double> value, std::optional<double> sr);
std::string mb_text(std::optional<double> bytes);

// xxHash64 over every tensor's bytes (not the padding between them).
std::uint64_t arena_digest(const Arena& a);
// The digest of the trainer's (rank 0's) arena, broadcast to every rank.
std::uint64_t bcast_digest(const Arena* mine, MPI_Comm comm);

// Waits for `reqs` with MPI_Testall and short sleeps (idle ranks leave the 2 cores to others).
void wait_all(std::vector<MPI_Request>& reqs);
// Sends or receives `bytes` at `data` in pieces of at most 64 MiB (tags tag, tag+1, ...).
void isend_pieces(const void* data, std::uint64_t bytes, int peer, int tag, MPI_Comm comm,
                  std::vector<MPI_Request>& reqs);
void irecv_pieces(void* data, std::uint64_t bytes, int peer, int tag, MPI_Comm comm, std::vector<MPI_Request>& reqs);
void bcast_pieces(void* data, std::uint64_t bytes, int root, MPI_Comm comm);
// Sleeps until `t`, driving MPI progress every millisecond (this rank may be serving reads).
void progress_sleep_until(Clock::time_point t);

// Every rank's row (any length) at rank 0; empty elsewhere.
std::vector<std::vector<double>> gather_rows(MPI_Comm comm, const std::vector<double>& mine);
std::vector<std::string> gather_strings(MPI_Comm comm, const std::string& mine);

// Traffic counters. Per rank: the bytes its host's interface (--iface) sent and received, from
// /proc/net/dev of the rank's network namespace (one emulated host per rank under netsim).
// On rank 0: the lines "key bytes" that --counters-cmd prints (e.g. netsim.sh counters).
class Counters {
 public:
  Counters(const CommonFlags& f, int rank);
  void start();  // collective-free; call on every rank before the phase
  // Deltas since start(): {"host_tx_bytes": [per rank], "host_rx_bytes": [...], "counters": {...}}
  // at rank 0 (collective: gathers); null members when not measured.
  nlohmann::json stop(MPI_Comm comm);
  bool have_iface() const { return !iface_.empty(); }

 private:
  std::map<std::string, double> sample() const;
  std::string iface_;
  std::string cmd_;
  int rank_ = 0;
  std::map<std::string, double> before_;
};

// Rank, role (roles[rank], "reader" past its end), host and datacenter label (TENSORHUB_DC, as
// the hub reads it) of every rank, at rank 0.
nlohmann::json rank_labels(MPI_Comm comm, const std::vector<std::string>& roles);

// The JSON every result file starts with: the benchmark, its exact command line (and
// TH_BENCH_LAUNCH, the launcher command the scripts export), model, hub settings, S/R.
nlohmann::json header(const std::string& scenario, const Args& args, const CommonFlags& f, const Model& m,
                      int world_size);
// Prints the table, writes the JSON file (if any) and prints where.
void emit(const nlohmann::json& j, const Table& table, const std::string& path);
// The result of a size sweep: one size's object as it is (the format of a single run), several
// as {"benchmark", "command", "launch", "sizes": [one object per size]}. Writes it to `path`
// (if any) and prints where.
void emit_sweep(const std::vector<nlohmann::json>& per_size, const std::string& path);

double mean(const std::vector<double>& v);
double median(std::vector<double> v);

}  // namespace tensorhub::cli::bench
