// RAII for HDF5 identifiers and the one place HDF5 return codes become SnapshotError.
//
// Every id the library opens lives in a Handle<close-function>; every call's return code goes
// through check()/check_id(), which throw SnapshotError("snapshot 'FILE': WHAT (HDF5: ...)") with
// the innermost messages of HDF5's error stack. ErrorSilencer turns off HDF5's automatic printing
// of that stack for the duration of a public call and restores the caller's setting after.
#pragma once

#include <hdf5.h>

#include <string>
#include <string_view>
#include <utility>

#include "tensorhub/snapshot/snapshot.hpp"

namespace tensorhub::snapshot::h5 {

// Saves HDF5's automatic error printing for the default stack, disables it, restores it on
// destruction. Public entry points hold one; nesting is harmless.
class ErrorSilencer {
 public:
  ErrorSilencer();
  ~ErrorSilencer();
  ErrorSilencer(const ErrorSilencer&) = delete;
  ErrorSilencer& operator=(const ErrorSilencer&) = delete;

 private:
  H5E_auto2_t func_ = nullptr;
  void* data_ = nullptr;
  bool saved_ = false;
};

// The most useful lines of HDF5's current error stack ("H5Dopen2(): ...: object 'x' doesn't
// exist"), then clears it. Empty when the stack is empty.
std::string take_error_stack();

// "snapshot 'FILE': WHAT" (+ " (HDF5: ...)" when HDF5 has something to say).
[[noreturn]] void fail(std::string_view file, std::string_view what);

inline void check(herr_t rc, std::string_view file, std::string_view what) {
  if (rc < 0) fail(file, what);
}
inline hid_t check_id(hid_t id, std::string_view file, std::string_view what) {
  if (id < 0) fail(file, what);
  return id;
}
// For H5*exists / H5*is_* style calls: negative is an error, else a boolean.
inline bool check_tri(htri_t rc, std::string_view file, std::string_view what) {
  if (rc < 0) fail(file, what);
  return rc > 0;
}

// Move-only owner of one HDF5 id; Close is H5Fclose, H5Dclose, ...
template <herr_t (*Close)(hid_t)>
class Handle {
 public:
  Handle() = default;
  // Takes ownership of `id`; throws SnapshotError naming `file` and `what` if id < 0.
  Handle(hid_t id, std::string_view file, std::string_view what) : id_(check_id(id, file, what)) {}
  ~Handle() { reset(); }
  Handle(Handle&& other) noexcept : id_(std::exchange(other.id_, H5I_INVALID_HID)) {}
  Handle& operator=(Handle&& other) noexcept {
    if (this != &other) {
      reset();
      id_ = std::exchange(other.id_, H5I_INVALID_HID);
    }
    return *this;
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;

  hid_t get() const { return id_; }
  explicit operator bool() const { return id_ >= 0; }

  // Closes now and reports failure (a file close flushes: its errors matter on the success path).
  void close(std::string_view file, std::string_view what) {
    const hid_t id = std::exchange(id_, H5I_INVALID_HID);
    if (id >= 0) check(Close(id), file, what);
  }

 private:
  // Destructor path: errors are ignored (an exception is usually already in flight).
  void reset() noexcept {
    if (id_ >= 0) (void)Close(std::exchange(id_, H5I_INVALID_HID));
  }
  hid_t id_ = H5I_INVALID_HID;
};

using File = Handle<H5Fclose>;
using Group = Handle<H5Gclose>;
using Dataset = Handle<H5Dclose>;
using Dataspace = Handle<H5Sclose>;
using Datatype = Handle<H5Tclose>;
using Attribute = Handle<H5Aclose>;
using PropList = Handle<H5Pclose>;

}  // namespace tensorhub::snapshot::h5
