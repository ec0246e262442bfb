// tensorhub::PublishHandle for Python (module.cpp; tensorhub/_async.py wraps it in
// tensorhub.PublishHandle). Every blocking call releases the GIL. Dropping it does not stop the
// publish (as in C++).
#pragma once

#include <pybind11/pybind11.h>

#include <utility>

#include "convert.hpp"
#include "tensorhub/hub.hpp"

namespace tensorhub::python {

class PyPublishHandle {
 public:
  explicit PyPublishHandle(PublishHandle handle) : handle_(std::move(handle)) {}

  [[nodiscard]] bool ready() const { return handle_.ready(); }
  [[nodiscard]] bool wait(double timeout_s) const {
    py::gil_scoped_release nogil;
    return handle_.wait(to_ms(timeout_s));
  }
  [[nodiscard]] py::dict result() const {
    PublishResult r;
    {
      py::gil_scoped_release nogil;
      r = handle_.result();
    }
    return to_dict(r);
  }
  void cancel() {
    py::gil_scoped_release nogil;
    handle_.cancel();
  }

 private:
  PublishHandle handle_;
};

}  // namespace tensorhub::python
