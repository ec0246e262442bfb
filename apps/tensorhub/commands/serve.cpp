// tensorhub serve: a standalone coordinator (no MPI), for hubs shared by several jobs.
// Workers reach it with HubOptions::hub_address or TENSORHUB_HUB=host:port.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <cstdio>
#include <iostream>
#include <memory>

#include "common/command_table.hpp"
#include "common/commands.hpp"
#include "common/options.hpp"
#include "tensorhub/coord/auth.hpp"
#include "tensorhub/coord/coordinator.hpp"
#include "tensorhub/coord/grpc_server.hpp"
#include "tensorhub/coord/metrics.hpp"
#include "tensorhub/coord/metrics_server.hpp"
#include "tensorhub/coord/standby.hpp"
#include "tensorhub/core/error.hpp"

namespace po = boost::program_options;

namespace tensorhub::cli {

int cmd_serve(const Args& args) {
  std::string listen = "0.0.0.0:7070";
  std::string metrics;
  coord::CoordinatorConfig cfg;
  std::int64_t lease_ms = cfg.lease.count();
  std::int64_t rail_wait_ms = cfg.plan_rail_wait.count();
  coord::StandbyOptions standby;
  std::int64_t takeover_ms = standby.takeover_after.count();
  std::string token_file = coord::default_token_file();
  std::string operator_token_file;  // default: <token-file>.operator
  coord::ServerAuth auth;
  po::options_description desc(
      help_head("serve",
                "Failover: on a second host run  tensorhub serve --standby-of HOST1:7070  and give workers both\n"
                "addresses, TENSORHUB_HUB=HOST1:7070,HOST2:7070: the standby refuses calls while the primary\n"
                "answers and takes over when it has been silent for --takeover-after; workers then register\n"
                "again and re-publish what they hold (README \"Failure model\").\n"));
  desc.add_options()("listen", po::value(&listen)->default_value(listen),
                     "address:port to listen on (port 0 = any free port)")(
      "max-readers", po::value(&cfg.max_readers_per_source)->default_value(cfg.max_readers_per_source),
      "concurrent readers one source serves (K)")(
      "plan-fanout", po::value(&cfg.plan_fanout)->default_value(cfg.plan_fanout),
      "plan-based pulls: children per source and stripe (1 = one relay chain per stripe, every holder sends one "
      "copy; K > 1 = K-ary striped trees); at most --max-readers")(
      "plan-rails", po::value(&cfg.plan_rails)->default_value(cfg.plan_rails),
      "plan-based pulls on hosts with one NIC per GPU (rail-optimised fabrics): GPUs per host. Stripe s enters a "
      "host through the GPU with TENSORHUB_GPU = s mod N and reaches the host's other GPUs over NVLink, so each "
      "NIC carries 1/N of the version. 1 = no rails")(
      "plan-rail-wait", po::value(&rail_wait_ms)->default_value(rail_wait_ms),
      "with --plan-rails: how long (ms) a reader waits for its host's GPU of a stripe's rail before it fetches "
      "that stripe over its own NIC")(
      "lease", po::value(&lease_ms)->default_value(lease_ms),
      "worker lease in ms: a worker silent this long is declared dead and its references, pins and slots "
      "are removed; suspect (no new reads) after half of it. Workers heartbeat every lease/5. 0 = never")(
      "metrics", po::value(&metrics),
      "serve Prometheus metrics at http://HOST:PORT/metrics (port 0 = any free port; README \"Observability\")")(
      "standby-of", po::value(&standby.primary), "run as the standby of the primary coordinator at HOST:PORT")(
      "takeover-after", po::value(&takeover_ms)->default_value(takeover_ms),
      "standby: take over when the primary has not answered for this many ms")(
      "token-file", po::value(&token_file)->default_value(token_file),
      "the hub's job token: created (mode 0600, 64 random hex characters) when absent, never printed. Workers "
      "and tools read it through TENSORHUB_TOKEN_FILE (or TENSORHUB_TOKEN); README \"Security model\"")(
      "operator-token-file", po::value(&operator_token_file),
      "the operator token (created like --token-file; default <token-file>.operator): what `recover` and "
      "tools that retain/release/attach versions of models they do not publish need")(
      "tls-cert", po::value(&auth.tls_cert_file), "TLS: server certificate chain (PEM); with --tls-key")(
      "tls-key", po::value(&auth.tls_key_file), "TLS: server private key (PEM)")(
      "tls-client-ca", po::value(&auth.tls_client_ca_file), "TLS: require client certificates signed by this CA (PEM)");
  po::variables_map vm;
  if (!parse_options("serve", desc, args, vm)) return 0;
  check_host_port("--listen", listen, /*any_port=*/true);
  if (cfg.max_readers_per_source == 0) throw UserError("--max-readers must be at least 1");
  if (cfg.plan_fanout == 0) throw UserError("--plan-fanout must be at least 1");
  if (cfg.plan_rails == 0) throw UserError("--plan-rails must be at least 1 (1 = no rails)");
  if (rail_wait_ms < 0) throw UserError("--plan-rail-wait must not be negative");
  cfg.plan_rail_wait = std::chrono::milliseconds(rail_wait_ms);
  if (lease_ms < 0) throw UserError("--lease must not be negative");
  if (takeover_ms <= 0) throw UserError("--takeover-after must be positive");
  cfg.lease = std::chrono::milliseconds(lease_ms);
  standby.takeover_after = std::chrono::milliseconds(takeover_ms);
  standby.probe = std::min(standby.probe, standby.takeover_after);

  // Block the stop signals in every thread (gRPC's included), then wait for one here.
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);

  coord::Coordinator coordinator(cfg);
  std::unique_ptr<coord::StandbyWatch> watch;
  if (token_file.empty()) throw UserError("--token-file is empty (and HOME is unset): name a token file");
  auth.token = coord::load_or_create_token_file(token_file);
  if (operator_token_file.empty()) operator_token_file = token_file + ".operator";
  auth.operator_token = coord::load_or_create_token_file(operator_token_file);
  if (auth.operator_token == auth.token) throw UserError("--operator-token-file holds the job token");
  if (!standby.primary.empty()) {
    standby.auth = coord::ClientAuth::from_environment();  // TLS settings for probing the primary
    standby.auth.token = auth.token;                       // a standby shares the primary's token
  }
  coord::GrpcServerOptions server_options;
  server_options.auth = auth;
  if (!standby.primary.empty()) {
    watch = std::make_unique<coord::StandbyWatch>(standby);
    server_options.refuse = [w = watch.get()] { return w->refusal(); };
  }
  coord::CallMetrics calls;
  coord::MeteredClient metered(coordinator, calls);
  coord::GrpcServer server(metered, listen, server_options);
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  std::unique_ptr<coord::MetricsServer> metrics_server;
  if (!metrics.empty()) {
    metrics_server = std::make_unique<coord::MetricsServer>(
        metrics, [&coordinator, &calls] { return coord::render_metrics(coordinator, &calls); });
    std::printf("tensorhub coordinator metrics at http://%s/metrics\n", metrics_server->address_for(host).c_str());
  }
  std::printf("tensorhub coordinator listening on %s (pid %d, lease %lld ms%s; token in %s, operator token in %s%s)\n",
              server.address_for(host).c_str(), getpid(), static_cast<long long>(lease_ms),
              watch ? (", standby of " + standby.primary).c_str() : "", token_file.c_str(), operator_token_file.c_str(),
              auth.tls_cert_file.empty() ? "" : ", TLS");
  std::fflush(stdout);
  int sig = 0;
  sigwait(&stop, &sig);
  std::printf("tensorhub coordinator: signal %d, shutting down\n", sig);
  metrics_server.reset();
  server.shutdown();
  return 0;
}

}  // namespace tensorhub::cli
