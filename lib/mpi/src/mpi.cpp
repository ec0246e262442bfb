#include "tensorhub/mpi/mpi.hpp"

#include <cstdio>
#include <cstdlib>
#include <thread>
#include <utility>

#include "tensorhub/core/env.hpp"
#include "tensorhub/mpi/ulfm.hpp"

namespace tensorhub::mpi {

MpiError::MpiError(int code, const std::string& what) : TransportError(what), code_(code) {}

void check(int rc, std::string_view what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {};
  int len = 0;
  if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS) len = 0;
  throw MpiError(rc, std::string(what) + " failed: " + std::string(text, static_cast<std::size_t>(len)) +
                         " (MPI error " + std::to_string(rc) + ")");
}

Environment::Environment(int* argc, char*** argv) {
  int initialized = 0;
  check(MPI_Initialized(&initialized), "MPI_Initialized");
  if (initialized) throw ContractViolation("internal error: MPI initialized twice");
  // Read before MPI starts: the destructor, which uses it, cannot report a bad value.
  if (const auto s = env::seconds("TENSORHUB_FINALIZE_TIMEOUT_S", 1, 3600)) finalize_timeout_ = *s;
  check(MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided_), "MPI_Init_thread");
  check(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
}

Environment::~Environment() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  if (ulfm_support().enabled) {
    const long limit = static_cast<long>(finalize_timeout_.count());
    std::thread([code = exit_code_, limit] {
      std::this_thread::sleep_for(std::chrono::seconds(limit));
      std::fprintf(stderr,
                   "tensorhub: MPI_Finalize did not return within %ld s after a process failure (Open MPI ULFM, "
                   "open-mpi/ompi#11404); exiting with %d\n",
                   limit, code);
      std::fflush(nullptr);
      std::_Exit(code);
    }).detach();
  }
  MPI_Finalize();
}

Comm Comm::duplicate(MPI_Comm comm) {
  MPI_Comm out = MPI_COMM_NULL;
  check(MPI_Comm_dup(comm, &out), "MPI_Comm_dup");
  check(MPI_Comm_set_errhandler(out, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
  return Comm(out);
}

Comm Comm::split(MPI_Comm comm, int color, int key) {
  MPI_Comm out = MPI_COMM_NULL;
  check(MPI_Comm_split(comm, color, key, &out), "MPI_Comm_split");
  if (out != MPI_COMM_NULL) check(MPI_Comm_set_errhandler(out, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
  return Comm(out);
}

Comm::~Comm() {
  if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

Comm::Comm(Comm&& other) noexcept : comm_(std::exchange(other.comm_, MPI_COMM_NULL)) {}

Comm& Comm::operator=(Comm&& other) noexcept {
  if (this != &other) {
    if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
    comm_ = std::exchange(other.comm_, MPI_COMM_NULL);
  }
  return *this;
}

int Comm::rank() const {
  int r = 0;
  check(MPI_Comm_rank(comm_, &r), "MPI_Comm_rank");
  return r;
}

int Comm::size() const {
  int n = 0;
  check(MPI_Comm_size(comm_, &n), "MPI_Comm_size");
  return n;
}

void sleepy_barrier(MPI_Comm comm, std::chrono::microseconds poll) {
  MPI_Request req = MPI_REQUEST_NULL;
  check(MPI_Ibarrier(comm, &req), "MPI_Ibarrier");
  for (;;) {
    int done = 0;
    check(MPI_Test(&req, &done, MPI_STATUS_IGNORE), "MPI_Test(barrier)");
    if (done) return;
    std::this_thread::sleep_for(poll);
  }
}

std::string bcast_string(MPI_Comm comm, int root, std::string value) {
  unsigned long long len = value.size();
  check(MPI_Bcast(&len, 1, MPI_UNSIGNED_LONG_LONG, root, comm), "MPI_Bcast(length)");
  value.resize(len);
  if (len > 0) {
    check(MPI_Bcast(value.data(), static_cast<int>(len), MPI_CHAR, root, comm), "MPI_Bcast(string)");
  }
  return value;
}

std::vector<double> gather_double(MPI_Comm comm, int root, double value) {
  int rank = 0;
  int size = 0;
  check(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
  check(MPI_Comm_size(comm, &size), "MPI_Comm_size");
  std::vector<double> out(rank == root ? static_cast<std::size_t>(size) : 0);
  check(MPI_Gather(&value, 1, MPI_DOUBLE, out.data(), 1, MPI_DOUBLE, root, comm), "MPI_Gather");
  return out;
}

std::string processor_name() {
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int len = 0;
  check(MPI_Get_processor_name(name, &len), "MPI_Get_processor_name");
  return std::string(name, static_cast<std::size_t>(len));
}

}  // namespace tensorhub::mpi
