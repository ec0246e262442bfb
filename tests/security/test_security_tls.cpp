// Optional TLS on the control plane (issue 16 item 1): with a certificate and key the server
// speaks only TLS; a client trusting the CA gets in with the token, a plain-TCP client does not.
// The test certificates are in tests/data/tls (README there).
#include <sys/stat.h>

#include <chrono>
#include <string>

#include "security_util.hpp"
#include "slow_proxy.hpp"
#include "tensorhub/core/error.hpp"

namespace tensorhub::coord::security {
namespace {

const std::string kDir = TH_TLS_DIR;

TEST(SecurityTls, TlsServerServesTlsClientsWithTheTokenOnly) {
  Coordinator coordinator;
  GrpcServerOptions o;
  o.auth.token = generate_token();
  o.auth.tls_cert_file = kDir + "/server.pem";
  o.auth.tls_key_file = kDir + "/server.key";
  GrpcServer server(coordinator, "127.0.0.1:0", o);

  ClientAuth tls;
  tls.token = o.auth.token;
  tls.tls_ca_file = kDir + "/ca.pem";
  GrpcClient good(server.address_for("127.0.0.1"), 5s, tls);
  EXPECT_NO_THROW(good.status());
  const auto id = good.register_worker(worker_info("a"));
  EXPECT_NO_THROW(good.heartbeat(id));

  ClientAuth plain;
  plain.token = o.auth.token;
  GrpcClient cleartext(server.address_for("127.0.0.1"), 2s, plain);
  EXPECT_THROW(cleartext.status(), TransportError);  // no TLS handshake, no service

  ClientAuth wrong = tls;
  wrong.token = generate_token();
  GrpcClient impostor(server.address_for("127.0.0.1"), 5s, wrong);
  EXPECT_THROW(impostor.status(), UserError);  // TLS is not a credential by itself
}

TEST(SecurityTls, AHandshakeSlowerThanTheReconnectBackoffIsWaitedFor) {
  // On a loaded host a connection's handshakes can take longer than gRPC's reconnect backoff
  // (100..500 ms here). Each attempt must get its time (kMinConnectTimeout), within the call's
  // deadline: with 100 ms a reader failed RegisterWorker ("tcp handshaker shutdown") while the
  // coordinator was up. Here every TLS handshake takes 1.5 s.
  Coordinator coordinator;
  GrpcServerOptions o;
  o.auth.token = generate_token();
  o.auth.tls_cert_file = kDir + "/server.pem";
  o.auth.tls_key_file = kDir + "/server.key";
  GrpcServer server(coordinator, "127.0.0.1:0", o);
  const auto direct = server.address_for("127.0.0.1");
  test::SlowProxy proxy(static_cast<std::uint16_t>(std::stoi(direct.substr(direct.rfind(':') + 1))),
                        std::chrono::milliseconds(1500));
  ClientAuth tls;
  tls.token = o.auth.token;
  tls.tls_ca_file = kDir + "/ca.pem";
  GrpcClient slow(proxy.address(), 10s, tls);
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_NO_THROW(slow.register_worker(worker_info("slow")));
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 1400ms) << "the proxy did not delay the handshake";
  EXPECT_GE(proxy.accepted(), 1);
}

TEST(SecurityTls, MissingFilesAreClearErrors) {
  Coordinator coordinator;
  GrpcServerOptions o;
  o.auth.token = generate_token();
  o.auth.tls_cert_file = kDir + "/no-such.pem";
  o.auth.tls_key_file = kDir + "/server.key";
  EXPECT_THROW(GrpcServer(coordinator, "127.0.0.1:0", o), UserError);
  o.auth.tls_cert_file = kDir + "/server.pem";
  o.auth.tls_key_file.clear();
  EXPECT_THROW(GrpcServer(coordinator, "127.0.0.1:0", o), UserError);
  ClientAuth a;
  a.tls_ca_file = kDir + "/no-such-ca.pem";
  EXPECT_THROW(GrpcClient("127.0.0.1:1", 1s, a), UserError);
}

TEST(SecurityTls, TokenFilesAreCreatedPrivateAndNeverLoose) {
  const auto dir = std::string(::testing::TempDir()) + "/th-token-" + generate_token().substr(0, 8);
  const auto path = dir + "/token";
  const auto token = load_or_create_token_file(path);
  EXPECT_EQ(token.size(), 64u);
  EXPECT_EQ(load_or_create_token_file(path), token);  // read back, not replaced
  EXPECT_EQ(read_token_file(path), token);
  struct stat st {};
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  chmod(path.c_str(), 0644);
  EXPECT_THROW(load_or_create_token_file(path), UserError);  // readable by others: refused
  EXPECT_TRUE(constant_time_equal(token, token));
  EXPECT_FALSE(constant_time_equal(token, token.substr(1)));
  EXPECT_NE(generate_token(), generate_token());
}

}  // namespace
}  // namespace tensorhub::coord::security
