// TCP plumbing of the `staged` path: an owned descriptor, a listener, a connect with a deadline,
// and nonblocking send/receive of frame bytes. Errors: TransportError naming the call and errno.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <utility>

#include "staged/codec.hpp"

namespace tensorhub::transport::staged {

class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  Fd& operator=(Fd&& o) noexcept;
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd();
  [[nodiscard]] int get() const { return fd_; }
  [[nodiscard]] bool valid() const { return fd_ >= 0; }
  void reset() noexcept;

 private:
  int fd_ = -1;
};

// The IPv4 address to listen on and advertise: `configured` (an IPv4 address or a host name;
// TENSORHUB_STAGED_ADDRESS) or, when empty, what this host's name resolves to, else 127.0.0.1.
std::string listen_address(const std::string& configured);

// A nonblocking listening socket on `address`, port chosen by the kernel; the port out.
Fd listen_tcp(const std::string& address, std::uint16_t& port);
// A nonblocking accepted connection, or an invalid Fd when none is pending.
Fd accept_tcp(const Fd& listener);
// A nonblocking connected socket (TCP_NODELAY); TransportError when refused or not connected
// within `timeout`.
Fd connect_tcp(const std::string& address, std::uint16_t port, std::chrono::milliseconds timeout);

// Reads what is there into `in`; false on end of stream or an error (`why` says which).
bool receive(const Fd& fd, FrameReader& in, std::string& why);
// Sends as much of `out` as the socket takes (the rest stays in `out`); false on an error.
bool flush(const Fd& fd, std::string& out, std::string& why);

}  // namespace tensorhub::transport::staged
