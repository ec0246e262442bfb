// Serves Prometheus metrics over HTTP (cpp-httplib, Debian libcpp-httplib-dev): GET /metrics
// answers render() as text exposition format 0.0.4; anything else is 404. RAII: the constructor
// binds and starts one listening thread, the destructor stops it.
#pragma once

#include <functional>
#include <memory>
#include <string>

namespace tensorhub::coord {

class MetricsServer {
 public:
  // `listen` is "host:port" (port 0 = any free port). Throws UserError for a malformed address,
  // TransportError when it cannot be bound. `render` is called on the server thread per scrape
  // and must be thread-safe; an exception becomes a 500 with its text.
  MetricsServer(const std::string& listen, std::function<std::string()> render);
  ~MetricsServer();
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  int port() const;
  std::string address_for(const std::string& host) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tensorhub::coord
