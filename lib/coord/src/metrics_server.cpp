#include "tensorhub/coord/metrics_server.hpp"

#include <httplib.h>
#include <sys/socket.h>

#include <chrono>
#include <thread>
#include <utility>

#include "tensorhub/core/error.hpp"

namespace tensorhub::coord {

struct MetricsServer::Impl {
  httplib::Server server;
  std::thread thread;
  std::string host;
  int port = 0;
};

MetricsServer::MetricsServer(const std::string& listen, std::function<std::string()> render)
    : impl_(std::make_unique<Impl>()) {
  const auto colon = listen.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == listen.size()) {
    throw UserError("metrics address must be HOST:PORT, not '" + listen + "'");
  }
  impl_->host = listen.substr(0, colon);
  if (impl_->host.size() > 2 && impl_->host.front() == '[' && impl_->host.back() == ']') {
    impl_->host = impl_->host.substr(1, impl_->host.size() - 2);
  }
  int port = 0;
  try {
    std::size_t used = 0;
    port = std::stoi(listen.substr(colon + 1), &used);
    if (used != listen.size() - colon - 1 || port < 0 || port > 65535) throw std::out_of_range("port");
  } catch (const std::exception&) {
    throw UserError("metrics address '" + listen + "': the port must be a number 0..65535");
  }
  // httplib's default also sets SO_REUSEPORT, which lets a second server share a port in use
  // (scrapes would be split between them): only SO_REUSEADDR (restart while in TIME_WAIT).
  impl_->server.set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  impl_->server.Get("/metrics", [render = std::move(render)](const httplib::Request&, httplib::Response& res) {
    try {
      res.set_content(render(), "text/plain; version=0.0.4; charset=utf-8");
    } catch (const std::exception& e) {
      res.status = 500;
      res.set_content(std::string("metrics failed: ") + e.what() + "\n", "text/plain");
    }
  });
  impl_->port = port == 0 ? impl_->server.bind_to_any_port(impl_->host) : port;
  if (impl_->port < 0 || (port != 0 && !impl_->server.bind_to_port(impl_->host, port))) {
    throw TransportError("cannot listen for metrics on " + listen + " (address in use or not local)");
  }
  impl_->thread = std::thread([s = &impl_->server] { s->listen_after_bind(); });
  // stop() only stops a server that is running: wait for it before anyone may destroy us.
  for (int i = 0; i < 5000 && !impl_->server.is_running(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

MetricsServer::~MetricsServer() {
  impl_->server.stop();
  if (impl_->thread.joinable()) impl_->thread.join();
}

int MetricsServer::port() const { return impl_->port; }

std::string MetricsServer::address_for(const std::string& host) const {
  const bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(impl_->port);
}

}  // namespace tensorhub::coord
