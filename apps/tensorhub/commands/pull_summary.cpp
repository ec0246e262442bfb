#include "pull_summary.hpp"

#include <cstdint>
#include <cstdio>

#include "common/report.hpp"
#include "tensorhub/core/units.hpp"
#include "tensorhub/mpi/mpi.hpp"

namespace tensorhub::cli {
namespace {

constexpr std::size_t kFields = 13;

}  // namespace

std::vector<double> gather_totals(MPI_Comm comm, const PullTotals& t, int world_rank) {
  const std::vector<double> mine{t.pulls,   t.bytes,     t.seconds,  t.origin, t.relay,
                                 t.file,    t.min_gbps,  t.max_gbps, t.last,   static_cast<double>(world_rank),
                                 t.resolve, t.no_source, t.verify};
  int me = 0;
  int n = 0;
  mpi::check(MPI_Comm_rank(comm, &me), "MPI_Comm_rank");
  mpi::check(MPI_Comm_size(comm, &n), "MPI_Comm_size");
  std::vector<double> all(me == 0 ? kFields * static_cast<std::size_t>(n) : 0);
  mpi::check(MPI_Gather(mine.data(), static_cast<int>(kFields), MPI_DOUBLE, all.data(), static_cast<int>(kFields),
                        MPI_DOUBLE, 0, comm),
             "MPI_Gather(pull results)");
  return all;
}

void print_summary(const std::vector<double>& all, const std::string& model, bool group, bool verify,
                   bool check_pattern, const std::string& json) {
  Table table({"reader (rank)", "pulls", "last version", "bytes", "GB/s min..max", "from publishers", "from relays",
               "from files"});
  nlohmann::json jr = nlohmann::json::array();
  const std::size_t n = all.size() / kFields;
  for (std::size_t r = 0; r < n; ++r) {
    const double* f = &all[r * kFields];
    table.add({std::to_string(r) + " (" + fmt(f[9], 0) + ")", fmt(f[0], 0), fmt(f[8], 0),
               format_bytes(static_cast<std::uint64_t>(f[1])), fmt(f[6], 2) + ".." + fmt(f[7], 2),
               format_bytes(static_cast<std::uint64_t>(f[3])), format_bytes(static_cast<std::uint64_t>(f[4])),
               format_bytes(static_cast<std::uint64_t>(f[5]))});
    // Counts as JSON integers (they travel as doubles in the gather; exact below 2^53).
    const auto u = [](double x) { return static_cast<std::uint64_t>(x); };
    jr.push_back(
        {{"reader", r},
         {"rank", static_cast<int>(f[9])},
         {"pulls", u(f[0])},
         {"last_version", u(f[8])},
         {"bytes", u(f[1])},
         {"seconds", f[2]},
         {"origin_bytes", u(f[3])},
         {"relay_bytes", u(f[4])},
         {"file_bytes", u(f[5])},
         {"min_gbps", f[6]},
         {"max_gbps", f[7]},
         {"stages", {{"resolve_s", f[10]}, {"no_source_s", f[11]}, {"verify_s", f[12]}, {"transfer_s", f[2]}}}});
  }
  table.print(stdout);
  if (verify)
    std::printf("every pull verified: the checksum of every chunk (the manifest's algorithm)%s\n",
                check_pattern ? " and the synthetic pattern" : "");
  if (!json.empty()) write_json_file(json, {{"model", model}, {"group", group}, {"readers", jr}});
}

}  // namespace tensorhub::cli
