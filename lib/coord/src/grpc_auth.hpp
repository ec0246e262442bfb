// The server's gate (private): checks each call's bearer token and, for calls naming a worker,
// that worker's session secret (README "Security model"). Thread-safe.
#pragma once

#include <grpcpp/grpcpp.h>

#include <mutex>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "tensorhub/coord/auth.hpp"
#include "tensorhub/coord/types.hpp"

namespace tensorhub::coord {

inline constexpr const char* kSessionHeader = "x-tensorhub-session";

// A refused call: becomes a status with `code` (UNAUTHENTICATED or PERMISSION_DENIED).
class Denied : public std::runtime_error {
 public:
  Denied(grpc::StatusCode code, const std::string& what) : std::runtime_error(what), code_(code) {}
  grpc::StatusCode code() const { return code_; }

 private:
  grpc::StatusCode code_;
};

enum class Role { kOpen, kWorker, kOperator };  // kOpen: the server has no token (tests)

class Gatekeeper {
 public:
  explicit Gatekeeper(ServerAuth auth) : auth_(std::move(auth)) {}

  // The caller's role from its bearer token; throws Denied(UNAUTHENTICATED).
  Role authenticate(const grpc::ServerContextBase& ctx) const;
  // A call acting for `worker` must carry that worker's session (operators included).
  // A worker id without a session here is left to the backend (UnknownWorker).
  void check_worker(const grpc::ServerContextBase& ctx, Role role, WorkerId worker) const;
  // The registered workers whose valid session the call carries.
  std::vector<WorkerId> callers(const grpc::ServerContextBase& ctx) const;
  // A fresh session for a newly registered worker ("" when authentication is off).
  std::string open(WorkerId worker);
  void close(WorkerId worker);

  std::shared_ptr<grpc::ServerCredentials> credentials() const;

 private:
  ServerAuth auth_;
  mutable std::mutex mu_;
  std::unordered_map<WorkerId, std::string> sessions_;
};

}  // namespace tensorhub::coord
