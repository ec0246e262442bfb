// A TCP proxy on loopback whose every connection answers late: what the client sends goes to the
// upstream at once, what the upstream answers is held until `delay` after the connection was
// accepted. A TLS handshake through it takes at least `delay`, like one on a loaded host.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace tensorhub::test {

class SlowProxy {
 public:
  SlowProxy(std::uint16_t upstream_port, std::chrono::milliseconds delay) : upstream_(upstream_port), delay_(delay) {
    listen_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a = loopback(0);
    if (listen_ < 0 || ::bind(listen_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(listen_, 16) != 0) {
      throw std::runtime_error("SlowProxy: cannot listen on loopback");
    }
    socklen_t len = sizeof a;
    ::getsockname(listen_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    acceptor_ = std::thread([this] { accept_loop(); });
  }
  ~SlowProxy() {
    stop_ = true;
    acceptor_.join();
    for (auto& t : connections_) t.join();
    ::close(listen_);
  }
  SlowProxy(const SlowProxy&) = delete;
  SlowProxy& operator=(const SlowProxy&) = delete;

  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  int accepted() const { return accepted_.load(); }

 private:
  static sockaddr_in loopback(std::uint16_t port) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return a;
  }

  void accept_loop() {
    while (!stop_) {
      pollfd p{listen_, POLLIN, 0};
      if (::poll(&p, 1, 20) <= 0) continue;
      const int client = ::accept(listen_, nullptr, nullptr);
      if (client < 0) continue;
      ++accepted_;
      connections_.emplace_back([this, client] { relay(client); });
    }
  }

  // Forwards both ways until either side closes or the proxy stops.
  void relay(int client) {
    const auto open_at = std::chrono::steady_clock::now() + delay_;
    const int server = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a = loopback(upstream_);
    if (server < 0 || ::connect(server, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
      ::close(client);
      if (server >= 0) ::close(server);
      return;
    }
    std::vector<char> held;  // upstream bytes not yet due
    char buf[16384];
    bool open = true;
    while (open && !stop_) {
      const bool due = std::chrono::steady_clock::now() >= open_at;
      if (due && !held.empty()) {
        if (::send(client, held.data(), held.size(), MSG_NOSIGNAL) < 0) break;
        held.clear();
      }
      pollfd p[2] = {{client, POLLIN, 0}, {server, POLLIN, 0}};
      if (::poll(p, 2, 10) <= 0) continue;
      for (int i = 0; i < 2 && open; ++i) {
        if ((p[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
        const auto n = ::recv(p[i].fd, buf, sizeof buf, 0);
        if (n <= 0) {
          open = false;
        } else if (i == 0) {
          open = ::send(server, buf, static_cast<std::size_t>(n), MSG_NOSIGNAL) == n;
        } else if (std::chrono::steady_clock::now() < open_at) {
          held.insert(held.end(), buf, buf + n);
        } else {
          open = ::send(client, buf, static_cast<std::size_t>(n), MSG_NOSIGNAL) == n;
        }
      }
    }
    ::close(server);
    ::close(client);
  }

  std::uint16_t upstream_;
  std::chrono::milliseconds delay_;
  int listen_ = -1;
  std::uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> accepted_{0};
  std::thread acceptor_;
  std::vector<std::thread> connections_;  // touched by the acceptor thread only, joined after it
};

}  // namespace tensorhub::test
