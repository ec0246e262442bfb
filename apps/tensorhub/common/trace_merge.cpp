#include "common/trace_merge.hpp"

#include <climits>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "tensorhub/core/error.hpp"
#include "tensorhub/core/trace.hpp"
#include "tensorhub/mpi/mpi.hpp"

namespace tensorhub::cli {
namespace {

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return {};
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

}  // namespace

int merge_job_trace(MPI_Comm comm, const std::string& path) {
  int rank = 0;
  int size = 1;
  mpi::check(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
  mpi::check(MPI_Comm_size(comm, &size), "MPI_Comm_size");
  if (size == 1) return path.empty() ? 0 : 1;  // the hub wrote `path` itself
  // In an MPMD job only some commands may trace: the lowest rank that does merges into its path.
  const int mine_if_tracing = path.empty() ? size : rank;
  int root = size;
  mpi::check(MPI_Allreduce(&mine_if_tracing, &root, 1, MPI_INT, MPI_MIN, comm), "MPI_Allreduce(trace root)");
  if (root == size) return 0;
  const auto out_path = mpi::bcast_string(comm, root, path);
  const auto mine_path = path.empty() ? std::string() : trace_file_for_rank(path, rank, size);
  std::string mine = path.empty() ? std::string() : read_file(mine_path);
  if (mine.size() > static_cast<std::size_t>(INT_MAX)) mine.clear();  // too big to send: kept as its own file
  int n = static_cast<int>(mine.size());
  std::vector<int> sizes(rank == root ? static_cast<std::size_t>(size) : 0);
  mpi::check(MPI_Gather(&n, 1, MPI_INT, sizes.data(), 1, MPI_INT, root, comm), "MPI_Gather(trace sizes)");
  std::vector<int> displs(sizes.size());
  std::size_t total = 0;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    displs[i] = static_cast<int>(total);
    total += static_cast<std::size_t>(sizes[i]);
  }
  // Every rank learns whether the root can take them all (no rank may leave a collective early).
  int too_big = total > static_cast<std::size_t>(INT_MAX) ? 1 : 0;
  mpi::check(MPI_Bcast(&too_big, 1, MPI_INT, root, comm), "MPI_Bcast(trace size check)");
  if (too_big) {
    if (rank == root) std::printf("trace: the ranks' traces exceed 2 GiB together; kept as per-rank files\n");
    return 0;
  }
  std::string all(rank == root ? total : 0, '\0');
  mpi::check(MPI_Gatherv(mine.data(), n, MPI_CHAR, all.data(), sizes.data(), displs.data(), MPI_CHAR, root, comm),
             "MPI_Gatherv(traces)");
  if (!mine.empty()) std::filesystem::remove(mine_path);
  if (rank != root) return 0;
  std::vector<std::string> parts;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] > 0)
      parts.push_back(all.substr(static_cast<std::size_t>(displs[i]), static_cast<std::size_t>(sizes[i])));
  }
  const auto merged = merge_traces(parts);
  std::ofstream f(out_path, std::ios::binary | std::ios::trunc);
  if (!f) throw UserError("cannot write the trace file " + out_path);
  f << merged;
  if (!f.flush()) throw UserError("error writing the trace file " + out_path);
  std::printf("trace of %zu ranks written to %s (open it in ui.perfetto.dev or chrome://tracing)\n", parts.size(),
              out_path.c_str());
  std::fflush(stdout);
  return static_cast<int>(parts.size());
}

}  // namespace tensorhub::cli
