// Credentials of the control plane (README "Security model").
//
// Every gRPC call carries a bearer token ("authorization: Bearer <token>" metadata) that the
// server compares in constant time; a worker's calls also carry the session secret that
// RegisterWorker returned for it ("x-tensorhub-session"). Tokens are 64 hex characters from the
// kernel's CSPRNG. Two kinds of token exist:
//   job token       what every worker of the hub holds: `tensorhub serve --token-file`, or the
//                   secret rank 0 generates for the coordinator it starts in the job;
//   operator token  `tensorhub serve --operator-token-file` (default <token-file>.operator):
//                   may also retain/release/attach any version (a job token may do so only for
//                   models its worker publishes). Nobody, operators included, may act for a
//                   worker without that worker's session. A job's own coordinator uses its
//                   job token as operator token too (the secret never leaves the job).
// Optional TLS: server certificate + key (and optionally a CA to require client certificates);
// clients give the CA that signed the server's certificate.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace tensorhub::coord {

// What a client sends (GrpcClient).
struct ClientAuth {
  std::string token;          // empty = send none (only a server without a token accepts that)
  std::string tls_ca_file;    // non-empty = TLS, trusting this CA (PEM)
  std::string tls_cert_file;  // optional client certificate (PEM), with tls_key_file
  std::string tls_key_file;
  std::string tls_server_name;  // optional: the name the server's certificate carries

  // From the environment: TENSORHUB_TOKEN (the token itself), else the file named by
  // TENSORHUB_TOKEN_FILE, else $HOME/.tensorhub/token when it exists; TLS from
  // TENSORHUB_TLS_CA, TENSORHUB_TLS_CERT, TENSORHUB_TLS_KEY, TENSORHUB_TLS_SERVER_NAME.
  // Throws UserError for a named file that cannot be read or holds no valid token.
  static ClientAuth from_environment();
};

// What a server checks (GrpcServer).
struct ServerAuth {
  std::string token;           // job token; empty = no authentication (unit tests only)
  std::string operator_token;  // optional operator token
  std::string tls_cert_file;   // non-empty (with tls_key_file) = TLS
  std::string tls_key_file;
  std::string tls_client_ca_file;  // non-empty = require client certificates signed by it
};

// 32 random bytes from getrandom(2), as 64 lowercase hex characters. Throws TransportError
// when the kernel cannot provide them.
std::string generate_token();

// Compares in time that depends only on the lengths, not on where the strings differ.
bool constant_time_equal(std::string_view a, std::string_view b);

// A token as found in a file: surrounding whitespace trimmed; 16..512 printable characters.
// Throws UserError naming the file otherwise (never printing its content).
std::string read_token_file(const std::string& path);

// `tensorhub serve`: reads the token in `path`, or, when the file does not exist, creates it
// (mode 0600, parent directory 0700 if missing) holding a fresh generate_token(). Refuses a
// file readable by group or others. Returns the token (never logged).
std::string load_or_create_token_file(const std::string& path);

// $HOME/.tensorhub/token, or "" when HOME is unset.
std::string default_token_file();

}  // namespace tensorhub::coord
