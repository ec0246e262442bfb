// Error agreement for the parallel writer: a step that fails on one rank must fail on all of
// them, or the others would block in the next collective HDF5 call. Each step runs under
// attempt() (which records an exception instead of throwing) and is followed by agree() (which
// throws on every rank if any rank failed: the failing rank rethrows its own exception, the
// others an exception of the same kind naming that rank and its message).
#pragma once

#include <mpi.h>

#include <exception>
#include <optional>
#include <string>

namespace tensorhub::snapshot::collective {

struct Failure {
  std::exception_ptr error;
  std::string message;
  int kind = 0;  // 0 SnapshotError / UserError, 1 ChecksumError, 2 anything else
};

template <class Fn>
std::optional<Failure> attempt(Fn&& fn);

// Collective over `comm`. Returns if no rank failed.
void agree(MPI_Comm comm, const std::optional<Failure>& local);

Failure capture(const std::exception_ptr& error);

template <class Fn>
std::optional<Failure> attempt(Fn&& fn) {
  try {
    fn();
    return std::nullopt;
  } catch (...) {
    return capture(std::current_exception());
  }
}

}  // namespace tensorhub::snapshot::collective
