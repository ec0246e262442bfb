// Thin RAII layer over MPI: every return code is checked and becomes an MpiError with context;
// every handle is released by a destructor. No other TensorHub code calls MPI_* directly except
// through these types (the transport's hot path uses Window::rget).
#pragma once

#include <mpi.h>

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "tensorhub/core/error.hpp"

namespace tensorhub::mpi {

class MpiError : public TransportError {
 public:
  MpiError(int code, const std::string& what);
  int code() const { return code_; }

 private:
  int code_;
};

// Throws MpiError("MPI_Win_lock_all on ... failed: <MPI error string>") unless rc == MPI_SUCCESS.
void check(int rc, std::string_view what);

// MPI_Init_thread(MPI_THREAD_MULTIPLE) / MPI_Finalize for applications and test mains.
// Sets MPI_ERRORS_RETURN on MPI_COMM_WORLD so that check() sees the codes.
class Environment {
 public:
  Environment(int* argc, char*** argv);
  ~Environment();
  Environment(const Environment&) = delete;
  Environment& operator=(const Environment&) = delete;
  int thread_level() const { return provided_; }
  // With ULFM on, MPI_Finalize may hang after a rank died (open-mpi/ompi#11404, 5-10% of runs
  // here): the destructor then gives it TENSORHUB_FINALIZE_TIMEOUT_S seconds (default 10, 1 to
  // 3600; read by the constructor, which refuses a bad value with UserError) and ends the
  // process with this code. Set it to main's return value.
  void set_exit_code(int code) { exit_code_ = code; }

 private:
  int provided_ = 0;
  int exit_code_ = 0;
  std::chrono::seconds finalize_timeout_{10};  // read by the constructor (the destructor cannot throw)
};

// A duplicated communicator, freed on destruction (move-only).
class Comm {
 public:
  static Comm duplicate(MPI_Comm comm);
  static Comm split(MPI_Comm comm, int color, int key);
  // Takes ownership of `comm` (e.g. the result of MPIX_Comm_shrink).
  static Comm adopt(MPI_Comm comm) { return Comm(comm); }
  Comm() = default;
  ~Comm();
  Comm(Comm&& other) noexcept;
  Comm& operator=(Comm&& other) noexcept;
  Comm(const Comm&) = delete;
  Comm& operator=(const Comm&) = delete;

  MPI_Comm get() const { return comm_; }
  int rank() const;
  int size() const;

 private:
  explicit Comm(MPI_Comm comm) : comm_(comm) {}
  MPI_Comm comm_ = MPI_COMM_NULL;
};

// Barrier that sleeps between tests instead of spinning, so idle ranks leave the CPU to the
// ranks that move data (matters on oversubscribed nodes).
void sleepy_barrier(MPI_Comm comm, std::chrono::microseconds poll = std::chrono::microseconds(500));

// Broadcasts a string from `root` to every rank of `comm`.
std::string bcast_string(MPI_Comm comm, int root, std::string value);

// Gathers one double from every rank to `root` (others get an empty vector).
std::vector<double> gather_double(MPI_Comm comm, int root, double value);

// Host name as MPI reports it.
std::string processor_name();

}  // namespace tensorhub::mpi
