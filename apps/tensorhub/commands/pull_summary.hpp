// tensorhub pull's closing report: what each reader rank measured over its pulls, gathered on
// rank 0 and printed as a table (and optionally JSON).
#pragma once

#include <mpi.h>

#include <string>
#include <vector>

namespace tensorhub::cli {

// What one rank measured over all its pulls.
struct PullTotals {
  double pulls = 0, bytes = 0, seconds = 0, origin = 0, relay = 0, file = 0, min_gbps = 1e30, max_gbps = 0, last = 0;
  double resolve = 0, no_source = 0, verify = 0;  // stage seconds, summed over the pulls
};

// Collective over `comm`: every rank's totals on rank 0 (empty elsewhere).
std::vector<double> gather_totals(MPI_Comm comm, const PullTotals& t, int world_rank);

// Rank 0: the table, the verification line and --json.
void print_summary(const std::vector<double>& all, const std::string& model, bool group, bool verify,
                   bool check_pattern, const std::string& json);

}  // namespace tensorhub::cli
