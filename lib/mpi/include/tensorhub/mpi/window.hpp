// RAII for MPI windows. TensorHub's data plane uses one *dynamic* window per hub: created once
// (collective), then every process attaches the memory it publishes or relays locally, with no
// further collectives. Readers address remote memory by (rank, MPI_Aint) and read it with
// MPI_Rget inside one long MPI_Win_lock_all epoch (passive target, shared access only: the
// coordinator's pins, not MPI locks, keep published memory unchanged while it is read).
#pragma once

#include <mpi.h>

#include <cstddef>
#include <string>

namespace tensorhub::mpi {

class Window {
 public:
  // Collective over `comm`.
  static Window create_dynamic(MPI_Comm comm);
  // Collective over `comm`; exposes [base, base+bytes) on this rank.
  static Window create(MPI_Comm comm, void* base, std::size_t bytes);
  // Collective over `comm`; MPI allocates `bytes` on this rank (MPI_Win_allocate) and returns
  // them in *base. Sizes may differ between ranks.
  static Window allocate(MPI_Comm comm, std::size_t bytes, void** base);

  Window() = default;
  ~Window();
  Window(Window&& other) noexcept;
  Window& operator=(Window&& other) noexcept;
  Window(const Window&) = delete;
  Window& operator=(const Window&) = delete;

  MPI_Win get() const { return win_; }
  bool valid() const { return win_ != MPI_WIN_NULL; }

  void lock_all();
  void unlock_all();
  // Nonblocking read of `bytes` from `target` at displacement `disp` into `dst`.
  // With `origin` (not MPI_DATATYPE_NULL): the `bytes` land in `dst` laid out by one element of
  // that datatype (a scattered read, datatype.hpp).
  MPI_Request rget(void* dst, std::size_t bytes, int target, MPI_Aint disp, MPI_Datatype origin = MPI_DATATYPE_NULL);
  // Starts an MPI_Get of the same; it is complete (dst written) after flush(target) returns.
  void get(void* dst, std::size_t bytes, int target, MPI_Aint disp, MPI_Datatype origin = MPI_DATATYPE_NULL);
  // MPI_Win_flush: blocks until every operation this process started on `target` completed.
  // Returns MPI's code (the caller decides how an error is reported).
  int flush(int target) noexcept;
  // Collective free. The destructor does NOT free a window that is still valid (that would be
  // a collective call during, e.g., exception unwinding on one rank): it abandons the handle.
  void free();

 private:
  MPI_Win win_ = MPI_WIN_NULL;
  bool dynamic_ = false;
  bool locked_ = false;
};

// Memory attached to a dynamic window for as long as this object lives.
class Attachment {
 public:
  Attachment(const Window& win, void* base, std::size_t bytes);
  ~Attachment();
  Attachment(const Attachment&) = delete;
  Attachment& operator=(const Attachment&) = delete;

  MPI_Aint address() const { return address_; }

 private:
  MPI_Win win_;
  void* base_;
  MPI_Aint address_ = 0;
};

}  // namespace tensorhub::mpi
