#include "collective.hpp"

#include "tensorhub/mpi/mpi.hpp"
#include "tensorhub/snapshot/snapshot.hpp"

namespace tensorhub::snapshot::collective {

Failure capture(const std::exception_ptr& error) {
  Failure f;
  f.error = error;
  try {
    std::rethrow_exception(error);
  } catch (const ChecksumError& e) {
    f.kind = 1;
    f.message = e.what();
  } catch (const UserError& e) {
    f.kind = 0;
    f.message = e.what();
  } catch (const std::exception& e) {
    f.kind = 2;
    f.message = e.what();
  } catch (...) {
    f.kind = 2;
    f.message = "unknown exception";
  }
  return f;
}

void agree(MPI_Comm comm, const std::optional<Failure>& local) {
  int rank = 0;
  int size = 0;
  mpi::check(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank in snapshot::write");
  mpi::check(MPI_Comm_size(comm, &size), "MPI_Comm_size in snapshot::write");
  const int mine = local ? rank : size;
  int first = size;
  mpi::check(MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm), "MPI_Allreduce in snapshot::write");
  if (first == size) return;
  int kind = local ? local->kind : 0;
  mpi::check(MPI_Bcast(&kind, 1, MPI_INT, first, comm), "MPI_Bcast in snapshot::write");
  const std::string message = mpi::bcast_string(comm, first, local ? local->message : std::string());
  if (local) std::rethrow_exception(local->error);
  const std::string text = "rank " + std::to_string(first) + " failed: " + message;
  if (kind == 1) throw ChecksumError(text);
  if (kind == 0) throw SnapshotError(text);
  throw Error(text);
}

}  // namespace tensorhub::snapshot::collective
