#include "grpc_auth.hpp"

#include <charconv>
#include <fstream>
#include <sstream>

#include "tensorhub/core/error.hpp"

namespace tensorhub::coord {
namespace {

std::string_view view(const grpc::string_ref& r) { return {r.data(), r.size()}; }

std::string read_pem(const std::string& path, const char* what) {
  std::ifstream in(path);
  if (!in) throw UserError(std::string("TLS ") + what + " file " + path + ": cannot be read");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// "<worker>:<secret>" -> (worker, secret); false when malformed.
bool parse_session(std::string_view v, WorkerId& worker, std::string_view& secret) {
  const auto colon = v.find(':');
  if (colon == std::string_view::npos || colon == 0) return false;
  const auto* end = v.data() + colon;
  const auto [p, ec] = std::from_chars(v.data(), end, worker);
  if (ec != std::errc() || p != end) return false;
  secret = v.substr(colon + 1);
  return true;
}

}  // namespace

Role Gatekeeper::authenticate(const grpc::ServerContextBase& ctx) const {
  if (auth_.token.empty()) return Role::kOpen;
  const auto& md = ctx.client_metadata();
  const auto it = md.find("authorization");
  if (it == md.end()) {
    throw Denied(grpc::StatusCode::UNAUTHENTICATED,
                 "no credential: this coordinator requires a token (TENSORHUB_TOKEN or TENSORHUB_TOKEN_FILE, "
                 "README \"Security model\")");
  }
  auto value = view(it->second);
  constexpr std::string_view kBearer = "Bearer ";
  if (value.starts_with(kBearer)) {
    value.remove_prefix(kBearer.size());
    // Both comparisons always run: the time taken does not say which token matched.
    const bool op = !auth_.operator_token.empty() && constant_time_equal(value, auth_.operator_token);
    const bool job = constant_time_equal(value, auth_.token);
    if (op) return Role::kOperator;
    if (job) return Role::kWorker;
  }
  throw Denied(grpc::StatusCode::UNAUTHENTICATED, "wrong credential: the token does not match this coordinator's");
}

void Gatekeeper::check_worker(const grpc::ServerContextBase& ctx, Role role, WorkerId worker) const {
  if (role == Role::kOpen) return;  // the operator too acts only for workers whose session it holds
  std::string expected;
  {
    std::lock_guard lock(mu_);
    const auto it = sessions_.find(worker);
    if (it == sessions_.end()) return;
    expected = it->second;
  }
  const auto range = ctx.client_metadata().equal_range(kSessionHeader);
  for (auto it = range.first; it != range.second; ++it) {
    WorkerId id = 0;
    std::string_view secret;
    if (parse_session(view(it->second), id, secret) && id == worker && constant_time_equal(secret, expected)) return;
  }
  throw Denied(grpc::StatusCode::PERMISSION_DENIED,
               "worker " + std::to_string(worker) +
                   ": the call does not carry that worker's session (a worker may act "
                   "only for itself)");
}

std::vector<WorkerId> Gatekeeper::callers(const grpc::ServerContextBase& ctx) const {
  std::vector<WorkerId> out;
  const auto range = ctx.client_metadata().equal_range(kSessionHeader);
  std::lock_guard lock(mu_);
  for (auto it = range.first; it != range.second; ++it) {
    WorkerId id = 0;
    std::string_view secret;
    if (!parse_session(view(it->second), id, secret)) continue;
    const auto s = sessions_.find(id);
    if (s != sessions_.end() && constant_time_equal(secret, s->second)) out.push_back(id);
  }
  return out;
}

std::string Gatekeeper::open(WorkerId worker) {
  if (auth_.token.empty()) return {};
  auto secret = generate_token();
  std::lock_guard lock(mu_);
  sessions_[worker] = secret;
  return secret;
}

void Gatekeeper::close(WorkerId worker) {
  std::lock_guard lock(mu_);
  sessions_.erase(worker);
}

std::shared_ptr<grpc::ServerCredentials> Gatekeeper::credentials() const {
  if (auth_.tls_cert_file.empty() && auth_.tls_key_file.empty()) return grpc::InsecureServerCredentials();
  if (auth_.tls_cert_file.empty() || auth_.tls_key_file.empty()) {
    throw UserError("TLS needs both a certificate and a key file");
  }
  grpc::SslServerCredentialsOptions opts(auth_.tls_client_ca_file.empty()
                                             ? GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE
                                             : GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  opts.pem_key_cert_pairs.push_back(
      {read_pem(auth_.tls_key_file, "key"), read_pem(auth_.tls_cert_file, "certificate")});
  if (!auth_.tls_client_ca_file.empty()) opts.pem_root_certs = read_pem(auth_.tls_client_ca_file, "client CA");
  return grpc::SslServerCredentials(opts);
}

}  // namespace tensorhub::coord
