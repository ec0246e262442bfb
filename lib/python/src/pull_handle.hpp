// The progress callback and tensorhub::PullHandle for Python (module.cpp): GIL rules of a pull.
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <tuple>
#include <utility>

#include "convert.hpp"
#include "tensorhub/hub.hpp"

namespace tensorhub::python {

// The progress callback runs on the pulling thread (for pull_async a hub worker thread) with the
// GIL released: it takes the GIL for the Python call and stores the first exception the callable
// raises (re-raised after the pull; later progress calls are skipped). It is shared with the
// hub's copy of the PullOptions, which a worker may destroy: the Python objects are dropped with
// the GIL held.
struct Progress {
  py::object fn;
  std::shared_ptr<py::error_already_set> error;
  explicit Progress(py::object f) : fn(std::move(f)) {}
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;
  Progress(Progress&&) = delete;
  Progress& operator=(Progress&&) = delete;
  ~Progress() {
    if (Py_IsInitialized() == 0) {
      fn.release();  // the interpreter is gone: nothing to decrement
      return;
    }
    try {
      py::gil_scoped_acquire gil;
      fn = py::object();
      error.reset();
    } catch (...) {
      fn.release();  // no GIL to be had: leak the reference rather than crash
    }
  }
  void operator()(std::uint64_t done, std::uint64_t total) {
    py::gil_scoped_acquire gil;
    if (error) return;
    try {
      fn(done, total);
    } catch (py::error_already_set& e) {
      error = std::make_shared<py::error_already_set>(std::move(e));
    }
  }
  // Re-raises the callable's exception, if any (GIL held).
  void rethrow() const {
    if (error) throw *error;
  }
};

inline PullOptions make_pull_options(const std::optional<GroupTuple>& group, bool verify, bool relay,
                                     const std::shared_ptr<Progress>& progress,
                                     const std::optional<double>& deadline_s) {
  PullOptions o;
  o.verify = verify;
  o.relay = relay;
  o.group = to_group(group);
  if (progress) o.progress = [progress](std::uint64_t done, std::uint64_t total) { (*progress)(done, total); };
  if (deadline_s) o.deadline = to_ms(*deadline_s);
  return o;
}

// tensorhub::PullHandle for Python (tensorhub/_async.py wraps it in tensorhub.PullHandle). Every
// blocking call releases the GIL (the pull's progress callback needs it); destroying it cancels a
// pull still running, with the GIL released.
class PyPullHandle {
 public:
  PyPullHandle(PullHandle handle, std::shared_ptr<Progress> progress)
      : handle_(std::move(handle)), progress_(std::move(progress)) {}
  PyPullHandle(const PyPullHandle&) = delete;
  PyPullHandle& operator=(const PyPullHandle&) = delete;
  PyPullHandle(PyPullHandle&&) = delete;
  PyPullHandle& operator=(PyPullHandle&&) = delete;
  ~PyPullHandle() {
    try {
      py::gil_scoped_release nogil;
      handle_ = PullHandle();  // cancels (and waits for) a pull still running; errors are logged
    } catch (...) {
      // releasing the GIL failed: handle_'s own destructor cancels, with the GIL held
    }
  }

  [[nodiscard]] bool ready() const { return handle_.ready(); }
  [[nodiscard]] bool wait(double timeout_s) const {
    py::gil_scoped_release nogil;
    return handle_.wait(to_ms(timeout_s));
  }
  [[nodiscard]] std::tuple<std::uint64_t, std::uint64_t> progress() const {
    const auto p = handle_.progress();
    return {p.done, p.total};
  }
  [[nodiscard]] py::dict result() const {
    PullResult r;
    {
      py::gil_scoped_release nogil;
      r = handle_.result();
    }
    if (progress_) progress_->rethrow();
    return to_dict(r);
  }
  void cancel() {
    py::gil_scoped_release nogil;
    handle_.cancel();
  }

 private:
  PullHandle handle_;
  std::shared_ptr<Progress> progress_;
};

}  // namespace tensorhub::python
