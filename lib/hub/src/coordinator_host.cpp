#include "coordinator_host.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <memory>
#include <utility>

#include "tensorhub/core/env.hpp"
#include "tensorhub/core/log.hpp"

namespace tensorhub {
namespace {

std::string local_hostname() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "localhost";
  return buf;
}

// The first non-loopback IPv4 (else IPv6) address `host` resolves to; "" if none.
std::string routable_address(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (getaddrinfo(host.c_str(), nullptr, &hints, &found) != 0 || found == nullptr) return {};
  const std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> guard(found, &freeaddrinfo);
  std::string v6;
  for (const auto* a = found; a != nullptr; a = a->ai_next) {
    char text[INET6_ADDRSTRLEN] = {};
    if (a->ai_family == AF_INET) {
      const auto* in = reinterpret_cast<const sockaddr_in*>(a->ai_addr);
      if ((ntohl(in->sin_addr.s_addr) >> 24) == 127) continue;
      if (inet_ntop(AF_INET, &in->sin_addr, text, sizeof text) != nullptr) return text;
    } else if (a->ai_family == AF_INET6 && v6.empty()) {
      const auto* in6 = reinterpret_cast<const sockaddr_in6*>(a->ai_addr);
      if (IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr) || IN6_IS_ADDR_LINKLOCAL(&in6->sin6_addr)) continue;
      if (inet_ntop(AF_INET6, &in6->sin6_addr, text, sizeof text) != nullptr) v6 = text;
    }
  }
  return v6;
}

// The job's own coordinator: its secret never leaves the job, so every process holding it is
// trusted as an operator too (may retain/release/attach any model, e.g. a retainer rank that
// publishes nothing). Acting for another worker still needs that worker's session.
coord::GrpcServerOptions with_token(std::string token) {
  coord::GrpcServerOptions o;
  o.auth.operator_token = token;
  o.auth.token = std::move(token);
  return o;
}

}  // namespace

std::string CoordinatorHost::listen_host(bool single_host) {
  if (auto forced = env::text("TENSORHUB_COORD_LISTEN")) return *forced;
  if (single_host) return "127.0.0.1";
  if (auto a = routable_address(local_hostname()); !a.empty()) return a;
  Logger("hub").warn("host name " + local_hostname() +
                     " resolves only to loopback: the job's coordinator listens on every interface "
                     "(set TENSORHUB_COORD_LISTEN to the job network's address)");
  return "0.0.0.0";
}

CoordinatorHost::CoordinatorHost(coord::CoordinatorConfig config, const std::string& listen_host, std::string token,
                                 const std::string& metrics)
    : coordinator_(std::make_unique<coord::Coordinator>(std::move(config))) {
  const bool v6 = listen_host.find(':') != std::string::npos && !listen_host.starts_with('[');
  server_ = std::make_unique<coord::GrpcServer>(metered_, (v6 ? "[" + listen_host + "]" : listen_host) + ":0",
                                                with_token(std::move(token)));
  const bool any = listen_host == "0.0.0.0" || listen_host == "::" || listen_host == "[::]";
  address_ = server_->address_for(any ? local_hostname() : listen_host);
  if (!metrics.empty()) {
    metrics_ = std::make_unique<coord::MetricsServer>(metrics,
                                                      [this] { return coord::render_metrics(*coordinator_, &calls_); });
  }
}

CoordinatorHost::~CoordinatorHost() { shutdown(); }

void CoordinatorHost::shutdown() {
  metrics_.reset();
  if (server_) server_->shutdown();
}

}  // namespace tensorhub
