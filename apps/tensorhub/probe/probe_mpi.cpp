// `tensorhub probe` as an MPI job:
//   1. every rank resolves its labels (host, TENSORHUB_DC/RACK/GPU, NUMA binding); rank 0
//      gathers them and groups ranks by host (leader = lowest rank of a host);
//   2. each host's leader discovers the hardware (once per host) and sends it to rank 0;
//   3. with 2+ endpoints (every rank, or the leaders with --scope host), each ordered pair
//      (reader i, holder j) is measured alone while the others wait in a barrier, so no two
//      pairs share a link: passive-target MPI_Rget from an MPI_Win_allocate window under one
//      MPI_Win_lock_all epoch, osu_get_latency / osu_get_bw style, for every size;
//   4. rank 0 prints the tables / JSON and writes --out.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>

#include "probe/probe_common.hpp"
#include "tensorhub/core/error.hpp"
#include "tensorhub/mpi/mpi.hpp"
#include "tensorhub/mpi/ulfm.hpp"
#include "tensorhub/mpi/window.hpp"

namespace tensorhub::cli {
namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

// How ranks wait between pairs. The holder of the pair being measured spins in MPI_Test: with
// Open MPI's osc ucx an MPI_Rget completes only when the holder drives progress (measured here:
// latency = the holder's polling interval otherwise), and so does any RMA over TCP. Bystanders
// sleep between polls to leave the CPUs to the pair on oversubscribed nodes.
constexpr std::chrono::microseconds kHolderPoll{0};
constexpr std::chrono::microseconds kIdlePoll{500};

// Gathers one string from every rank of `comm` to `root` (others get an empty vector).
std::vector<std::string> gather_strings(MPI_Comm comm, int root, const std::string& s) {
  int rank = 0;
  int size = 0;
  mpi::check(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
  mpi::check(MPI_Comm_size(comm, &size), "MPI_Comm_size");
  require(s.size() < (1u << 30), "gathered string too large");
  int len = static_cast<int>(s.size());
  std::vector<int> lens(rank == root ? static_cast<std::size_t>(size) : 0);
  mpi::check(MPI_Gather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, root, comm), "MPI_Gather(lengths)");
  std::vector<int> displs(lens.size());
  std::vector<char> all;
  if (rank == root) {
    long long total = 0;
    for (std::size_t i = 0; i < lens.size(); ++i) {
      displs[i] = static_cast<int>(total);
      total += lens[i];
    }
    require(total < (1ll << 31), "gathered strings too large");
    all.resize(static_cast<std::size_t>(total));
  }
  mpi::check(MPI_Gatherv(s.data(), len, MPI_CHAR, all.data(), lens.data(), displs.data(), MPI_CHAR, root, comm),
             "MPI_Gatherv(strings)");
  std::vector<std::string> out;
  for (std::size_t i = 0; i < lens.size(); ++i)
    out.emplace_back(all.data() + displs[i], static_cast<std::size_t>(lens[i]));
  return out;
}

unsigned char pattern(int rank) { return static_cast<unsigned char>(0x5a ^ (rank * 37 + 11)); }

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

void wait_all(std::vector<MPI_Request>& reqs, const char* what) {
  mpi::check(MPI_Waitall(static_cast<int>(reqs.size()), reqs.data(), MPI_STATUSES_IGNORE), what);
  reqs.clear();
}

struct PairResult {
  std::vector<double> gbps;
  std::vector<double> us;
};

// This rank reads from `holder`: latency (one MPI_Rget + MPI_Wait per iteration) and bandwidth
// (effective_window() MPI_Rgets in flight per iteration) for every size.
PairResult measure_pair(mpi::Window& win, int holder, const std::vector<std::uint64_t>& sizes, const ProbeConfig& c,
                        std::vector<unsigned char>& dst) {
  PairResult r;
  std::vector<MPI_Request> reqs;
  for (const std::uint64_t size : sizes) {
    for (std::uint32_t i = 0; i < c.warmup; ++i) {
      reqs.push_back(win.rget(dst.data(), size, holder, 0));
      wait_all(reqs, "MPI_Wait(latency warm-up)");
    }
    auto t = Clock::now();
    for (std::uint32_t i = 0; i < c.iters; ++i) {
      reqs.push_back(win.rget(dst.data(), size, holder, 0));
      wait_all(reqs, "MPI_Wait(latency)");
    }
    r.us.push_back(seconds_since(t) / c.iters * 1e6);
    if (dst[0] != pattern(holder) || dst[size - 1] != pattern(holder)) {
      throw ChecksumError("probe: MPI_Get from rank " + std::to_string(holder) + " returned wrong bytes");
    }

    const std::uint32_t w = effective_window(size, c.window);
    auto burst = [&](const char* what) {
      for (std::uint32_t k = 0; k < w; ++k) reqs.push_back(win.rget(dst.data() + k * size, size, holder, 0));
      wait_all(reqs, what);
    };
    for (std::uint32_t i = 0; i < c.warmup; ++i) burst("MPI_Waitall(bandwidth warm-up)");
    t = Clock::now();
    for (std::uint32_t i = 0; i < c.iters; ++i) burst("MPI_Waitall(bandwidth)");
    r.gbps.push_back(static_cast<double>(size) * w * c.iters / seconds_since(t) / 1e9);
  }
  return r;
}

// The matrix over `endpoints` (world ranks); rank 0 gets it, the others an empty one.
topo::GetMatrix measure_matrix(const ProbeConfig& c, int rank, const std::vector<std::int32_t>& endpoints) {
  topo::GetMatrix m;
  m.scope = c.scope;
  m.endpoints = endpoints;
  m.sizes = probe_sizes(c);
  m.iterations = c.iters;
  m.warmup = c.warmup;
  m.window = c.window;
  const std::size_t n = endpoints.size();
  const std::size_t ns = m.sizes.size();
  std::size_t me = n;
  for (std::size_t i = 0; i < n; ++i) {
    if (endpoints[i] == rank) me = i;
  }
  const std::uint64_t max = m.sizes.back();

  // Holders expose max bytes with a known pattern; non-endpoints expose nothing.
  void* base = nullptr;
  const bool endpoint = me < n;
  mpi::Window win = mpi::Window::allocate(MPI_COMM_WORLD, endpoint ? max : 0, &base);
  if (endpoint) std::memset(base, pattern(rank), max);  // also faults the pages in
  std::uint64_t dst_bytes = 0;                          // room for the largest burst of any size; zeroed = faulted in
  for (auto s : m.sizes) dst_bytes = std::max(dst_bytes, s * effective_window(s, c.window));
  std::vector<unsigned char> dst(endpoint ? dst_bytes : 0);
  win.lock_all();

  std::vector<double> bw(n * n * ns, 0.0);
  std::vector<double> lat(n * n * ns, 0.0);
  std::size_t holder = n;  // endpoint index of the holder being read from right now, if any
  auto wait_for_pair_end = [&] { mpi::sleepy_barrier(MPI_COMM_WORLD, me == holder ? kHolderPoll : kIdlePoll); };
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      if (i == j) continue;
      wait_for_pair_end();  // one pair at a time
      holder = j;
      if (i != me) continue;
      const PairResult r = measure_pair(win, endpoints[j], m.sizes, c, dst);
      for (std::size_t s = 0; s < ns; ++s) {
        bw[(i * n + j) * ns + s] = r.gbps[s];
        lat[(i * n + j) * ns + s] = r.us[s];
      }
    }
  }
  wait_for_pair_end();
  win.free();  // unlock_all + collective free

  std::vector<double> bw_all(rank == 0 ? bw.size() : 0);
  std::vector<double> lat_all(rank == 0 ? lat.size() : 0);
  mpi::check(MPI_Reduce(bw.data(), bw_all.data(), static_cast<int>(bw.size()), MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD),
             "MPI_Reduce(bandwidth)");
  mpi::check(
      MPI_Reduce(lat.data(), lat_all.data(), static_cast<int>(lat.size()), MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD),
      "MPI_Reduce(latency)");
  if (rank != 0) return {};
  const double nan = std::numeric_limits<double>::quiet_NaN();
  m.bandwidth_gbps.assign(n, std::vector<std::vector<double>>(n, std::vector<double>(ns, nan)));
  m.latency_us = m.bandwidth_gbps;
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      if (i == j) continue;
      for (std::size_t s = 0; s < ns; ++s) {
        m.bandwidth_gbps[i][j][s] = bw_all[(i * n + j) * ns + s];
        m.latency_us[i][j][s] = lat_all[(i * n + j) * ns + s];
      }
    }
  }
  return m;
}

}  // namespace

int run_probe_mpi(const ProbeConfig& c, int rank) {
  int size = 0;
  mpi::check(MPI_Comm_size(MPI_COMM_WORLD, &size), "MPI_Comm_size");

  // 1. Labels of every rank; rank 0 groups ranks by host and names the leaders.
  const json mine = topo::local_labels();
  const auto all_labels = gather_strings(MPI_COMM_WORLD, 0, mine.dump());
  topo::TopologyFile file;
  json plan;  // {"leaders": [...], "endpoints": [...]}
  if (rank == 0) {
    file.created = utc_now();
    file.command = c.command;
    std::map<std::string, std::size_t> host_index;
    for (int r = 0; r < size; ++r) {
      topo::RankEntry e;
      e.rank = r;
      e.labels = json::parse(all_labels[static_cast<std::size_t>(r)]).get<topo::Labels>();
      auto [it, fresh] = host_index.emplace(e.labels.host, file.hosts.size());
      if (fresh) {
        topo::HostEntry h;
        h.host = e.labels.host;
        h.dc = e.labels.dc;
        h.rack = e.labels.rack;
        h.leader = r;
        file.hosts.push_back(h);
      }
      file.hosts[it->second].ranks.push_back(r);
      file.ranks.push_back(e);
    }
    std::vector<std::int32_t> leaders;
    for (const auto& h : file.hosts) leaders.push_back(h.leader);
    std::vector<std::int32_t> everyone;
    for (int r = 0; r < size; ++r) everyone.push_back(r);
    plan = {{"leaders", leaders}, {"endpoints", c.scope == "host" ? leaders : everyone}};
  }
  plan = json::parse(mpi::bcast_string(MPI_COMM_WORLD, 0, plan.dump()));
  const auto leaders = plan.at("leaders").get<std::vector<std::int32_t>>();
  const auto endpoints = plan.at("endpoints").get<std::vector<std::int32_t>>();

  // 2. Hardware, once per host.
  const bool leader = std::find(leaders.begin(), leaders.end(), rank) != leaders.end();
  std::string hw;
  if (leader) hw = json(probe_node(c)).dump();
  const auto all_hw = gather_strings(MPI_COMM_WORLD, 0, hw);
  if (rank == 0) {
    for (auto& h : file.hosts) {
      h.topology = json::parse(all_hw[static_cast<std::size_t>(h.leader)]).get<topo::NodeTopology>();
    }
  }

  // 3. The MPI_Get matrix.
  if (c.matrix && endpoints.size() >= 2) {
    topo::GetMatrix m = measure_matrix(c, rank, endpoints);
    if (rank == 0) file.matrix = std::move(m);
  }

  // 4. Report.
  if (rank == 0) {
    probe_emit(c, file);
    if (!c.json && (!c.matrix || endpoints.size() < 2)) {
      std::printf("\n(no MPI_Get matrix: %s)\n", !c.matrix           ? "--no-matrix"
                                                 : c.scope == "host" ? "one host; --scope rank measures its ranks"
                                                                     : "one rank; run with mpirun -n 2 or more");
    }
    if (!c.json) std::printf("\nMPI fault tolerance: %s\n", mpi::ulfm_support().detail.c_str());
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace tensorhub::cli
