// The mpi_rma reads in flight: one PendingRead per MPI_Rget (its request, the caller's tag and
// the rank of the original job communicator it reads), completed with MPI_Testsome. Not
// thread-safe: the transport's mutex guards it.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

#include "tensorhub/transport/transport.hpp"

namespace tensorhub::transport {

struct PendingRead {
  MPI_Request request = MPI_REQUEST_NULL;
  std::uint64_t tag = 0;
  int target = -1;  // original rank
};

class RequestSet {
 public:
  void add(const PendingRead& read) { reads_.push_back(read); }
  std::size_t size() const { return reads_.size(); }
  bool empty() const { return reads_.empty(); }

  // MPI_Testsome over every read: appends the finished ones to `out` (ok) and drops them.
  // Returns MPI_Testsome's return code (the caller decides whether an error is fatal); on an
  // error nothing is appended or dropped.
  int test(std::vector<Completion>& out);

  // Appends a failed completion (`why` + the rank) for every read of a rank that `dead` marks
  // and drops it. Its request is abandoned, not freed: an RMA request to a dead rank never
  // completes, and nothing will write its destination.
  void fail_reads_of(const std::vector<bool>& dead, const std::string& why, std::vector<Completion>& out);

  // MPI_Waitall over every read (the destructor's path); errors are ignored.
  void wait_all() noexcept;

 private:
  std::vector<PendingRead> reads_;
  std::vector<MPI_Request> scratch_;  // MPI_Testsome needs the requests side by side
  std::vector<int> indices_;
};

}  // namespace tensorhub::transport
