// Error taxonomy (see README "Errors"):
//   UserError         bad input from the caller; nothing changed, fix the call.
//   NotFoundError     a UserError for an unknown model / version / tensor.
//   OffloadRequired   a UserError: the last holder of a retained version must offload it first.
//   UnknownWorker     a NotFoundError: the coordinator does not know the calling worker (its
//                     lease expired, or a standby took over): register again, re-publish.
//   TransportError    a data-plane or control-plane operation failed; retry elsewhere.
//   TimeoutError      a TransportError whose deadline expired.
//   ChecksumError     bytes read do not match the manifest; names tensor and chunk.
//   DeviceError       a device-memory operation failed (a CUDA call, the emulated device's
//                     mapping); names the call, its error and the context.
//   HubClosed         a UserError: the hub was closed (Hub::close); no call may follow.
//   ContractViolation an internal invariant broke: a bug in TensorHub.
#pragma once

#include <stdexcept>
#include <string>

namespace tensorhub {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class UserError : public Error {
 public:
  using Error::Error;
};

class NotFoundError : public UserError {
 public:
  using UserError::UserError;
};

// The last holder of a retained version asked to unpublish it and the version has no snapshot
// yet: it has to be offloaded to a snapshot file (or released) before its reference can go.
class OffloadRequired : public UserError {
 public:
  using UserError::UserError;
};

// The coordinator does not know this worker id: it never registered there, it was declared dead
// (lease expired), or another coordinator (a standby, a restart) now serves the hub. The worker
// registers again and re-publishes what it holds (the coordinator's state is soft).
class UnknownWorker : public NotFoundError {
 public:
  using NotFoundError::NotFoundError;
};

// A call on a hub after Hub::close() (or after it was abandoned).
class HubClosed : public UserError {
 public:
  using UserError::UserError;
};

class TransportError : public Error {
 public:
  using Error::Error;
};

class TimeoutError : public TransportError {
 public:
  using TransportError::TransportError;
};

// An asynchronous pull stopped by PullHandle::cancel() (or by the hub closing): what its
// result() rethrows.
class Cancelled : public Error {
 public:
  using Error::Error;
};

class ChecksumError : public Error {
 public:
  using Error::Error;
};

// A device-memory operation failed (lib/device): a CUDA runtime call returned an error (the
// message names the call, the CUDA error name and text, and what it was for), no device exists
// for the backend asked for, or the emulated device could not map its memory.
class DeviceError : public Error {
 public:
  using Error::Error;
};

class ContractViolation : public Error {
 public:
  using Error::Error;
};

// Throws ContractViolation with `what` when `condition` is false.
inline void require(bool condition, const std::string& what) {
  if (!condition) throw ContractViolation("internal error: " + what);
}

}  // namespace tensorhub
