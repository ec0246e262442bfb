#include "staged/server.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <deque>
#include <vector>

#include "tensorhub/core/error.hpp"
#include "tensorhub/core/log.hpp"

namespace tensorhub::transport::staged {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kAuthTimeout = std::chrono::seconds(10);
constexpr std::size_t kMaxConnections = 4096;
constexpr std::size_t kMaxPendingPerConn = 256;

bool same_key(const Key& a, const Key& b) {
  unsigned diff = 0;
  for (std::size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned>(a[i] ^ b[i]);
  return diff == 0;
}

}  // namespace

struct Server::Conn {
  Fd fd;
  FrameReader in;
  std::string out;
  bool authed = false;
  bool dead = false;
  Clock::time_point since = Clock::now();
  std::deque<Request> pending;
};

// The thread's own state: connections and who holds which slot.
namespace {
struct Slots {
  std::vector<const void*> owner;  // the Conn holding each slot, or nullptr
  std::vector<std::uint32_t> free;
};
}  // namespace

Server::Server(device::Device& device, const std::string& address, std::uint64_t slot_bytes, std::uint32_t slots)
    : device_(device), slot_bytes_(slot_bytes), slots_(slots), address_(address) {
  if (slot_bytes_ == 0 || slots_ == 0) throw UserError("staged: need at least one staging slot of at least one byte");
  if (::getrandom(key_.data(), key_.size(), 0) != static_cast<ssize_t>(key_.size())) {
    throw TransportError(std::string("staged: getrandom: ") + std::strerror(errno));
  }
  listener_ = listen_tcp(address_, port_);
  wake_ = Fd(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!wake_.valid()) throw TransportError(std::string("staged: eventfd: ") + std::strerror(errno));
  thread_ = std::thread([this] { run(); });
}

Server::~Server() { stop(); }

void Server::stop() {
  stop_ = true;
  const std::uint64_t one = 1;
  (void)!::write(wake_.get(), &one, sizeof one);
  if (thread_.joinable()) thread_.join();
}

EndpointText Server::endpoint() const {
  return EndpointText{address_, port_, static_cast<std::uint32_t>(::getpid()), key_};
}

void Server::set_ring(void* ring, Hello hello) {
  const std::lock_guard lock(mu_);
  if (ring_ != nullptr) throw UserError("staged: the staging ring is set once");
  hello.slot_bytes = slot_bytes_;
  hello.slots = slots_;
  ring_ = static_cast<std::uint8_t*>(ring);
  encode(hello, hello_);
}

std::uint64_t Server::add(const void* base, std::uint64_t bytes) {
  const std::lock_guard lock(mu_);
  if (ring_ == nullptr) throw UserError("staged: add() before set_ring()");
  const auto id = next_id_++;
  regions_[id] = Region{static_cast<const std::uint8_t*>(base), bytes};
  return id;
}

void Server::remove(std::uint64_t id) {
  const std::lock_guard lock(mu_);  // waits for a copy in progress
  regions_.erase(id);
}

void Server::run() noexcept {
  try {
    loop();
  } catch (const std::exception& e) {
    Logger("staged").error(std::string("the staging server stopped: ") + e.what() + " (reads of this holder now fail)");
  }
}

void Server::loop() {
  std::vector<std::unique_ptr<Conn>> conns;
  Slots slots;
  slots.owner.assign(slots_, nullptr);
  for (std::uint32_t s = slots_; s-- > 0;) slots.free.push_back(s);
  auto stream = device_.create_stream();
  std::vector<pollfd> fds;
  std::size_t rr = 0;  // round robin over connections with pending requests

  while (!stop_) {
    fds.clear();
    fds.push_back({wake_.get(), POLLIN, 0});
    fds.push_back({listener_.get(), POLLIN, 0});
    for (const auto& c : conns) {
      fds.push_back({c->fd.get(), static_cast<short>(POLLIN | (c->out.empty() ? 0 : POLLOUT)), 0});
    }
    if (::poll(fds.data(), fds.size(), 1000) < 0 && errno != EINTR) {
      throw TransportError(std::string("poll: ") + std::strerror(errno));
    }
    if (stop_) break;
    if ((fds[1].revents & POLLIN) != 0) {
      while (conns.size() < kMaxConnections) {
        Fd fd = accept_tcp(listener_);
        if (!fd.valid()) break;
        auto c = std::make_unique<Conn>();
        c->fd = std::move(fd);
        conns.push_back(std::move(c));
      }
    }
    const auto now = Clock::now();
    for (std::size_t i = 0; i < conns.size(); ++i) {
      Conn& c = *conns[i];
      const short ev = i + 2 < fds.size() && fds[i + 2].fd == c.fd.get() ? fds[i + 2].revents : 0;
      std::string why;
      if ((ev & (POLLIN | POLLHUP | POLLERR)) != 0) {
        const bool open = receive(c.fd, c.in, why);
        try {
          while (!c.dead) {
            auto f = c.in.next();
            if (!f) break;
            if (!c.authed) {
              const auto* a = std::get_if<Auth>(&*f);
              if (a == nullptr || !same_key(a->key, key_)) {
                c.dead = true;  // no answer to a stranger
                break;
              }
              c.authed = true;
              const std::lock_guard lock(mu_);
              if (hello_.empty()) {
                encode(Refused{0, "nothing is exposed on this holder's staged path"}, c.out);
              } else {
                c.out += hello_;
              }
            } else if (const auto* r = std::get_if<Request>(&*f)) {
              if (c.pending.size() >= kMaxPendingPerConn) c.dead = true;
              c.pending.push_back(*r);
            } else if (const auto* d = std::get_if<Done>(&*f)) {
              if (d->slot >= slots_ || slots.owner[d->slot] != &c) {
                c.dead = true;
              } else {
                slots.owner[d->slot] = nullptr;
                slots.free.push_back(d->slot);
              }
            } else {
              c.dead = true;  // a holder-to-reader frame from a reader
            }
          }
        } catch (const TransportError&) {
          c.dead = true;
        }
        if (!open) c.dead = true;
      }
      if (!c.authed && now - c.since > kAuthTimeout) c.dead = true;
    }
    // Free what dead connections held, then serve, then send.
    for (auto& c : conns) {
      if (!c->dead) continue;
      for (std::uint32_t s = 0; s < slots_; ++s) {
        if (slots.owner[s] == c.get()) {
          slots.owner[s] = nullptr;
          slots.free.push_back(s);
        }
      }
    }
    std::erase_if(conns, [](const auto& c) { return c->dead; });
    bool progress = true;
    while (progress && !slots.free.empty()) {
      progress = false;
      for (std::size_t k = 0; k < conns.size() && !slots.free.empty(); ++k) {
        Conn& c = *conns[(rr + k) % conns.size()];
        if (c.pending.empty()) continue;
        const Request r = c.pending.front();
        c.pending.pop_front();
        const auto slot = slots.free.back();
        slots.free.pop_back();
        if (serve_one(c, r, slot, stream)) {
          slots.owner[slot] = &c;
        } else {
          slots.free.push_back(slot);
        }
        progress = true;
      }
      if (!conns.empty()) rr = (rr + 1) % conns.size();
    }
    for (auto& c : conns) {
      std::string why;
      if (!c->out.empty() && !flush(c->fd, c->out, why)) c->dead = true;
    }
  }
}

bool Server::serve_one(Conn& c, const Request& r, std::uint32_t slot, device::Stream& stream) {
  std::string reason;
  {
    const std::lock_guard lock(mu_);
    const auto it = regions_.find(r.id);
    if (it == regions_.end()) {
      reason = "region " + std::to_string(r.id) + " is withdrawn (unpublished or dropped by its holder)";
    } else if (r.length == 0 || r.length > slot_bytes_ || r.offset > it->second.bytes ||
               r.length > it->second.bytes - r.offset) {
      reason = "read of " + std::to_string(r.length) + " bytes at " + std::to_string(r.offset) + " is outside region " +
               std::to_string(r.id) + " (" + std::to_string(it->second.bytes) + " bytes) or its staging slot";
    } else {
      try {
        device_.copy_async(ring_ + std::uint64_t{slot} * slot_bytes_, it->second.base + r.offset, r.length,
                           device::CopyKind::kDeviceToHost, stream);
        stream.synchronize();
      } catch (const std::exception& e) {
        reason = std::string("device-to-host copy failed: ") + e.what();
      }
    }
  }
  if (reason.empty()) {
    encode(Ready{r.ticket, slot}, c.out);
    ++served_;
    return true;
  }
  encode(Refused{r.ticket, reason}, c.out);
  ++refused_;
  return false;
}

}  // namespace tensorhub::transport::staged
