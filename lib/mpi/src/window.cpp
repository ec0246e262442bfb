#include "tensorhub/mpi/window.hpp"

#include <string>
#include <utility>

#include "tensorhub/mpi/mpi.hpp"

namespace tensorhub::mpi {

Window Window::create_dynamic(MPI_Comm comm) {
  Window w;
  check(MPI_Win_create_dynamic(MPI_INFO_NULL, comm, &w.win_), "MPI_Win_create_dynamic");
  check(MPI_Win_set_errhandler(w.win_, MPI_ERRORS_RETURN), "MPI_Win_set_errhandler");
  w.dynamic_ = true;
  return w;
}

Window Window::create(MPI_Comm comm, void* base, std::size_t bytes) {
  Window w;
  check(MPI_Win_create(base, static_cast<MPI_Aint>(bytes), 1, MPI_INFO_NULL, comm, &w.win_),
        "MPI_Win_create (with Open MPI, pass --mca osc ucx)");
  check(MPI_Win_set_errhandler(w.win_, MPI_ERRORS_RETURN), "MPI_Win_set_errhandler");
  return w;
}

Window Window::allocate(MPI_Comm comm, std::size_t bytes, void** base) {
  Window w;
  check(MPI_Win_allocate(static_cast<MPI_Aint>(bytes), 1, MPI_INFO_NULL, comm, base, &w.win_),
        "MPI_Win_allocate of " + std::to_string(bytes) + " bytes");
  check(MPI_Win_set_errhandler(w.win_, MPI_ERRORS_RETURN), "MPI_Win_set_errhandler");
  return w;
}

Window::~Window() {
  // Abandoned on purpose: MPI_Win_free is collective and may hang if this rank is failing
  // alone. MPI_Finalize / MPI_Abort reclaim it.
  win_ = MPI_WIN_NULL;
}

Window::Window(Window&& other) noexcept
    : win_(std::exchange(other.win_, MPI_WIN_NULL)),
      dynamic_(other.dynamic_),
      locked_(std::exchange(other.locked_, false)) {}

Window& Window::operator=(Window&& other) noexcept {
  if (this != &other) {
    win_ = std::exchange(other.win_, MPI_WIN_NULL);
    dynamic_ = other.dynamic_;
    locked_ = std::exchange(other.locked_, false);
  }
  return *this;
}

void Window::lock_all() {
  check(MPI_Win_lock_all(MPI_MODE_NOCHECK, win_), "MPI_Win_lock_all");
  locked_ = true;
}

void Window::unlock_all() {
  if (!locked_) return;
  locked_ = false;
  check(MPI_Win_unlock_all(win_), "MPI_Win_unlock_all");
}

MPI_Request Window::rget(void* dst, std::size_t bytes, int target, MPI_Aint disp, MPI_Datatype origin) {
  require(bytes <= (1ull << 30), "rget larger than 1 GiB");
  MPI_Request req = MPI_REQUEST_NULL;
  const int n = static_cast<int>(bytes);
  const bool scattered = origin != MPI_DATATYPE_NULL;
  check(MPI_Rget(dst, scattered ? 1 : n, scattered ? origin : MPI_BYTE, target, disp, n, MPI_BYTE, win_, &req),
        "MPI_Rget of " + std::to_string(bytes) + " bytes from rank " + std::to_string(target));
  return req;
}

void Window::get(void* dst, std::size_t bytes, int target, MPI_Aint disp, MPI_Datatype origin) {
  require(bytes <= (1ull << 30), "get larger than 1 GiB");
  const int n = static_cast<int>(bytes);
  const bool scattered = origin != MPI_DATATYPE_NULL;
  check(MPI_Get(dst, scattered ? 1 : n, scattered ? origin : MPI_BYTE, target, disp, n, MPI_BYTE, win_),
        "MPI_Get of " + std::to_string(bytes) + " bytes from rank " + std::to_string(target) + " at displacement " +
            std::to_string(disp));
}

int Window::flush(int target) noexcept { return MPI_Win_flush(target, win_); }

void Window::free() {
  if (win_ == MPI_WIN_NULL) return;
  unlock_all();
  check(MPI_Win_free(&win_), "MPI_Win_free");
}

Attachment::Attachment(const Window& win, void* base, std::size_t bytes) : win_(win.get()), base_(base) {
  check(MPI_Win_attach(win_, base, static_cast<MPI_Aint>(bytes)), "MPI_Win_attach");
  check(MPI_Get_address(base, &address_), "MPI_Get_address");
}

Attachment::~Attachment() { MPI_Win_detach(win_, base_); }

}  // namespace tensorhub::mpi
