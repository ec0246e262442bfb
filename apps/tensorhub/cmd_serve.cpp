// tensorhub serve: a standalone coordinator (no MPI), for hubs shared by several jobs.
// Workers reach it with HubOptions::hub_address or TENSORHUB_HUB=host:port.
#include <signal.h>
#include <unistd.h>

#include <boost/program_options.hpp>
#include <cstdio>
#include <iostream>

#include "commands.hpp"
#include "options.hpp"
#include "tensorhub/coord/coordinator.hpp"
#include "tensorhub/coord/grpc_server.hpp"

namespace po = boost::program_options;

namespace tensorhub::cli {

int cmd_serve(const Args& args) {
  std::string listen = "0.0.0.0:7070";
  coord::CoordinatorConfig cfg;
  po::options_description desc(
      "tensorhub serve: run a standalone coordinator until SIGINT/SIGTERM.\n"
      "Example: tensorhub serve --listen 0.0.0.0:7070 &  then  TENSORHUB_HUB=$(hostname):7070 mpirun ...\n"
      "Options");
  desc.add_options()("listen", po::value(&listen)->default_value(listen),
                     "address:port to listen on (port 0 = any free port)")(
      "max-readers", po::value(&cfg.max_readers_per_source)->default_value(cfg.max_readers_per_source),
      "concurrent readers one source serves (K)");
  po::variables_map vm;
  if (!parse_options("serve", desc, args, vm)) return 0;

  // Block the stop signals in every thread (gRPC's included), then wait for one here.
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);

  coord::Coordinator coordinator(cfg);
  coord::GrpcServer server(coordinator, listen);
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  std::printf("tensorhub coordinator listening on %s (pid %d)\n", server.address_for(host).c_str(), getpid());
  std::fflush(stdout);
  int sig = 0;
  sigwait(&stop, &sig);
  std::printf("tensorhub coordinator: signal %d, shutting down\n", sig);
  server.shutdown();
  return 0;
}

}  // namespace tensorhub::cli
