#include "bench/bench_common.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "tensorhub/core/checksum.hpp"
#include "tensorhub/core/env.hpp"
#include "tensorhub/core/units.hpp"
#include "tensorhub/mpi/mpi.hpp"

namespace tensorhub::cli::bench {
namespace {

constexpr std::uint64_t kPiece = 64ull << 20;  // largest single MPI message

int piece_count(std::uint64_t bytes) { return static_cast<int>((bytes + kPiece - 1) / kPiece); }
int piece_len(std::uint64_t bytes, int i) {
  return static_cast<int>(std::min<std::uint64_t>(kPiece, bytes - static_cast<std::uint64_t>(i) * kPiece));
}

}  // namespace

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

Clock::time_point at_offset(Clock::time_point t0, double seconds) {
  return t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

CommonFlags::CommonFlags() {
  hub.chunk = "512KiB";
  hub.max_readers = 1;
  hub.inflight = 3;
}

void CommonFlags::add_to(boost::program_options::options_description& desc) {
  namespace po = boost::program_options;
  desc.add_options()("tensors", po::value(&tensors)->default_value(tensors), "about this many bf16 tensors")(
      "link-mbit", po::value(&link_mbit)->default_value(link_mbit),
      "link rate R in Mbit/s, for the ratios to S/R (0: ratios are null)")(
      "json", po::value(&json), "also write the results as JSON to this file")(
      "iface", po::value(&iface)->default_value(iface),
      "count each host's bytes on this interface (/proc/net/dev); auto: th-eth0 when present, none: off")(
      "counters-cmd", po::value(&counters_cmd),
      "command rank 0 runs before and after each phase; prints 'key bytes' lines (e.g. netsim.sh counters)");
  hub.add_to(desc);
}

void CommonFlags::check() const {
  hub.check();
  if (!(link_mbit >= 0) || !std::isfinite(link_mbit)) throw UserError("--link-mbit must be >= 0");
  if (tensors == 0) throw UserError("--tensors must be at least 1");
}

Model make_model(const CommonFlags& f, std::uint64_t bytes) {
  Model m;
  m.specs = synthetic_model(bytes, f.tensors);
  for (const auto& s : m.specs) m.bytes += s.bytes();
  m.arena_bytes = Arena::bytes_needed(m.specs);
  return m;
}

std::optional<double> sr_seconds(std::uint64_t bytes, double link_mbit) {
  if (link_mbit <= 0) return std::nullopt;
  return static_cast<double>(bytes) * 8.0 / (link_mbit * 1e6);
}

nlohmann::json ratio_json(std::optional<double> value, std::optional<double> sr) {
  if (!value || !sr) return nullptr;
  return *value / *sr;
}

std::string ratio_text(std::optional<double> value, std::optional<double> sr) {
  return value && sr ? fmt(*value / *sr, 2) : "-";
}

std::string mb_text(std::optional<double> bytes) { return bytes ? fmt(*bytes / 1e6, 1) : "-"; }

std::uint64_t arena_digest(const Arena& a) {
  std::uint64_t d = 0;
  for (const auto& t : a.tensors()) d = d * 0x100000001B3ull ^ checksum64(t.data, t.spec.bytes());
  return d;
}

std::uint64_t bcast_digest(const Arena* mine, MPI_Comm comm) {
  std::uint64_t d = mine ? arena_digest(*mine) : 0;
  mpi::check(MPI_Bcast(&d, 1, MPI_UINT64_T, 0, comm), "MPI_Bcast(digest)");
  return d;
}

void wait_all(std::vector<MPI_Request>& reqs) {
  for (;;) {
    int done = 0;
    mpi::check(MPI_Testall(static_cast<int>(reqs.size()), reqs.data(), &done, MPI_STATUSES_IGNORE), "MPI_Testall");
    if (done) break;
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  reqs.clear();
}

void isend_pieces(const void* data, std::uint64_t bytes, int peer, int tag, MPI_Comm comm,
                  std::vector<MPI_Request>& reqs) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (int i = 0; i < piece_count(bytes); ++i) {
    reqs.emplace_back();
    mpi::check(MPI_Isend(p + static_cast<std::uint64_t>(i) * kPiece, piece_len(bytes, i), MPI_BYTE, peer, tag + i, comm,
                         &reqs.back()),
               "MPI_Isend");
  }
}

void irecv_pieces(void* data, std::uint64_t bytes, int peer, int tag, MPI_Comm comm, std::vector<MPI_Request>& reqs) {
  auto* p = static_cast<unsigned char*>(data);
  for (int i = 0; i < piece_count(bytes); ++i) {
    reqs.emplace_back();
    mpi::check(MPI_Irecv(p + static_cast<std::uint64_t>(i) * kPiece, piece_len(bytes, i), MPI_BYTE, peer, tag + i, comm,
                         &reqs.back()),
               "MPI_Irecv");
  }
}

void bcast_pieces(void* data, std::uint64_t bytes, int root, MPI_Comm comm) {
  auto* p = static_cast<unsigned char*>(data);
  for (int i = 0; i < piece_count(bytes); ++i) {
    mpi::check(MPI_Bcast(p + static_cast<std::uint64_t>(i) * kPiece, piece_len(bytes, i), MPI_BYTE, root, comm),
               "MPI_Bcast(model)");
  }
}

void progress_sleep_until(Clock::time_point t) {
  for (;;) {
    int flag = 0;
    mpi::check(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE), "MPI_Iprobe");
    const auto now = Clock::now();
    if (now >= t) return;
    std::this_thread::sleep_for(std::min<Clock::duration>(t - now, std::chrono::milliseconds(1)));
  }
}

std::vector<std::vector<double>> gather_rows(MPI_Comm comm, const std::vector<double>& mine) {
  int size = 0;
  int rank = 0;
  mpi::check(MPI_Comm_size(comm, &size), "MPI_Comm_size");
  mpi::check(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
  int n = static_cast<int>(mine.size());
  std::vector<int> counts(rank == 0 ? size : 0);
  mpi::check(MPI_Gather(&n, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, comm), "MPI_Gather(counts)");
  std::vector<int> displs(counts.size());
  int total = 0;
  for (std::size_t i = 0; i < counts.size(); ++i) {
    displs[i] = total;
    total += counts[i];
  }
  std::vector<double> all(static_cast<std::size_t>(total));
  mpi::check(MPI_Gatherv(mine.data(), n, MPI_DOUBLE, all.data(), counts.data(), displs.data(), MPI_DOUBLE, 0, comm),
             "MPI_Gatherv(rows)");
  std::vector<std::vector<double>> rows;
  for (std::size_t i = 0; i < counts.size(); ++i) {
    rows.emplace_back(all.begin() + displs[i], all.begin() + displs[i] + counts[i]);
  }
  return rows;
}

std::vector<std::string> gather_strings(MPI_Comm comm, const std::string& mine) {
  std::vector<double> codes(mine.begin(), mine.end());
  std::vector<std::string> out;
  for (const auto& row : gather_rows(comm, codes)) {
    std::string s;
    for (const double c : row) s.push_back(static_cast<char>(c));
    out.push_back(std::move(s));
  }
  return out;
}

nlohmann::json header(const std::string& scenario, const Args& args, const CommonFlags& f, const Model& m,
                      int world_size) {
  std::string cmd = "tensorhub bench " + scenario;
  for (const auto& a : args) cmd += " " + a;
  const auto sr = sr_seconds(m.bytes, f.link_mbit);
  const auto launch = env::text("TH_BENCH_LAUNCH");
  nlohmann::json j{{"benchmark", scenario},
                   {"command", cmd},
                   {"launch", launch.value_or("")},
                   {"world_size", world_size},
                   {"model_bytes", m.bytes},
                   {"message_bytes", m.arena_bytes},
                   {"tensors", m.specs.size()},
                   {"chunk_bytes", parse_bytes(f.hub.chunk)},
                   {"max_readers", f.hub.max_readers},
                   {"inflight", f.hub.inflight},
                   {"link_mbit", f.link_mbit > 0 ? nlohmann::json(f.link_mbit) : nlohmann::json()},
                   {"sr_seconds", sr ? nlohmann::json(*sr) : nlohmann::json()}};
  return j;
}

void emit(const nlohmann::json& j, const Table& table, const std::string& path) {
  table.print(stdout);
  if (!path.empty()) {
    write_json_file(path, j);
    std::printf("wrote %s\n", path.c_str());
  }
  std::fflush(stdout);
}

void emit_sweep(const std::vector<nlohmann::json>& per_size, const std::string& path) {
  if (per_size.empty() || path.empty()) return;
  nlohmann::json out = per_size.front();
  if (per_size.size() > 1) {
    out = {{"benchmark", per_size.front()["benchmark"]},
           {"command", per_size.front()["command"]},
           {"launch", per_size.front()["launch"]},
           {"sizes", per_size}};
  }
  write_json_file(path, out);
  std::printf("wrote %s\n", path.c_str());
  std::fflush(stdout);
}

double mean(const std::vector<double>& v) {
  if (v.empty()) return 0;
  double s = 0;
  for (const double x : v) s += x;
  return s / static_cast<double>(v.size());
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace tensorhub::cli::bench
