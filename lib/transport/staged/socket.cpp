#include "staged/socket.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>

#include "tensorhub/core/error.hpp"

namespace tensorhub::transport::staged {
namespace {

TransportError sys_error(const std::string& what, int err) {
  return TransportError("staged: " + what + ": " + std::strerror(err));
}

sockaddr_in make_addr(const std::string& address, std::uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  if (::inet_pton(AF_INET, address.c_str(), &a.sin_addr) != 1) {
    throw TransportError("staged: '" + address + "' is not an IPv4 address");
  }
  return a;
}

std::string resolve_ipv4(const std::string& name) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (::getaddrinfo(name.c_str(), nullptr, &hints, &res) != 0 || res == nullptr) return {};
  std::array<char, INET_ADDRSTRLEN> text{};
  const auto* in = reinterpret_cast<const sockaddr_in*>(res->ai_addr);
  const char* ok = ::inet_ntop(AF_INET, &in->sin_addr, text.data(), text.size());
  ::freeaddrinfo(res);
  return ok != nullptr ? std::string(text.data()) : std::string();
}

void set_nonblocking(int fd) {
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0) throw sys_error("fcntl O_NONBLOCK", errno);
}

void set_nodelay(int fd) {
  const int one = 1;
  if (::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0) throw sys_error("TCP_NODELAY", errno);
}

}  // namespace

Fd& Fd::operator=(Fd&& o) noexcept {
  if (this != &o) {
    reset();
    fd_ = std::exchange(o.fd_, -1);
  }
  return *this;
}
Fd::~Fd() { reset(); }
void Fd::reset() noexcept {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

std::string listen_address(const std::string& configured) {
  if (!configured.empty()) {
    in_addr a{};
    if (::inet_pton(AF_INET, configured.c_str(), &a) == 1) return configured;
    auto ip = resolve_ipv4(configured);
    if (ip.empty()) throw UserError("TENSORHUB_STAGED_ADDRESS='" + configured + "': no IPv4 address for that name");
    return ip;
  }
  std::array<char, 256> host{};
  if (::gethostname(host.data(), host.size() - 1) == 0) {
    auto ip = resolve_ipv4(host.data());
    if (!ip.empty()) return ip;
  }
  return "127.0.0.1";
}

Fd listen_tcp(const std::string& address, std::uint16_t& port) {
  Fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd.valid()) throw sys_error("socket", errno);
  const auto a = make_addr(address, 0);
  if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0) {
    throw sys_error("bind " + address + " (set TENSORHUB_STAGED_ADDRESS to an address of this host)", errno);
  }
  if (::listen(fd.get(), 128) != 0) throw sys_error("listen", errno);
  sockaddr_in bound{};
  socklen_t len = sizeof bound;
  if (::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&bound), &len) != 0) throw sys_error("getsockname", errno);
  port = ntohs(bound.sin_port);
  return fd;
}

Fd accept_tcp(const Fd& listener) {
  Fd fd(::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK));
  if (fd.valid()) set_nodelay(fd.get());
  return fd;
}

Fd connect_tcp(const std::string& address, std::uint16_t port, std::chrono::milliseconds timeout) {
  const std::string where = address + ":" + std::to_string(port);
  Fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) throw sys_error("socket", errno);
  set_nonblocking(fd.get());
  const auto a = make_addr(address, port);
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0) {
    if (errno != EINPROGRESS) throw sys_error("connect to the holder at " + where, errno);
    pollfd p{fd.get(), POLLOUT, 0};
    const int n = ::poll(&p, 1, static_cast<int>(timeout.count()));
    if (n == 0)
      throw TransportError("staged: connect to the holder at " + where + ": no answer in " +
                           std::to_string(timeout.count()) + " ms");
    if (n < 0) throw sys_error("poll (connect to " + where + ")", errno);
    int err = 0;
    socklen_t len = sizeof err;
    if (::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
    if (err != 0) throw sys_error("connect to the holder at " + where, err);
  }
  set_nodelay(fd.get());
  return fd;
}

bool receive(const Fd& fd, FrameReader& in, std::string& why) {
  std::array<char, 16384> buf{};
  for (;;) {
    const ssize_t n = ::recv(fd.get(), buf.data(), buf.size(), 0);
    if (n > 0) {
      in.append(buf.data(), static_cast<std::size_t>(n));
      if (in.buffered() > 4 * FrameReader::kMaxFrame) return true;  // parse before reading more
      continue;
    }
    if (n == 0) {
      why = "the connection was closed (the process exited?)";
      return false;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return true;
    why = std::string("receive: ") + std::strerror(errno);
    return false;
  }
}

bool flush(const Fd& fd, std::string& out, std::string& why) {
  std::size_t sent = 0;
  while (sent < out.size()) {
    const ssize_t n = ::send(fd.get(), out.data() + sent, out.size() - sent, MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    why = std::string("send: ") + std::strerror(errno);
    out.erase(0, sent);
    return false;
  }
  out.erase(0, sent);
  return true;
}

}  // namespace tensorhub::transport::staged
