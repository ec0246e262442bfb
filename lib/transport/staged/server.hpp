// The holder side of the `staged` path: a TCP server on its own thread (the holder's progress
// thread for this path) that serves reads of device memory through a ring of pinned host slots.
// For each request it copies the asked bytes device-to-host into a free slot and answers Ready;
// the reader reads the slot over a host path (its own cma/ucx transport, `inner`) and answers
// Done, which frees the slot. With two or more slots a reader's next piece is copied while it
// reads the last one (double buffering); memory stays slots x slot_bytes whatever is exposed.
//
// Threads: add()/remove()/set_ring() from any thread; remove() returns only when no copy of the
// region runs or can start (the copy holds the region table's lock), so a withdrawn region is
// never read. A connection serves nothing until its first frame carries the endpoint's key; one
// that breaks the protocol (a bad frame, a Done for a slot it does not hold, too many pending
// requests) or stays silent 10 s without authenticating is closed, and its slots are freed.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "staged/codec.hpp"
#include "staged/socket.hpp"
#include "tensorhub/device/device.hpp"

namespace tensorhub::transport::staged {

class Server {
 public:
  // Listens on `address` (port from the kernel), draws a key, starts the thread.
  Server(device::Device& device, const std::string& address, std::uint64_t slot_bytes, std::uint32_t slots);
  ~Server();  // stop()
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  [[nodiscard]] EndpointText endpoint() const;
  [[nodiscard]] std::uint64_t slot_bytes() const { return slot_bytes_; }
  [[nodiscard]] std::uint32_t slots() const { return slots_; }

  // The ring (slots x slot_bytes of host memory) and what Hello tells readers about it; once,
  // before the first add(). Until then a connection is answered with a refusal and closed.
  void set_ring(void* ring, Hello hello);
  // A region of device memory readers may read; its id (never reused).
  std::uint64_t add(const void* base, std::uint64_t bytes);
  void remove(std::uint64_t id);

  // Stops the thread and closes every connection (idempotent): after it returns nothing is
  // copied into the ring any more, so its owner may free it.
  void stop();

  // Requests served and refused so far (for tests and logs).
  [[nodiscard]] std::uint64_t served() const { return served_.load(); }
  [[nodiscard]] std::uint64_t refused() const { return refused_.load(); }

 private:
  struct Conn;
  struct Region {
    const std::uint8_t* base = nullptr;
    std::uint64_t bytes = 0;
  };
  void run() noexcept;
  void loop();
  // Copies one request into `slot` and queues the answer; false (slot unused) when refused.
  bool serve_one(Conn& c, const Request& r, std::uint32_t slot, device::Stream& stream);

  device::Device& device_;
  std::uint64_t slot_bytes_;
  std::uint32_t slots_;
  std::string address_;
  std::uint16_t port_ = 0;
  Key key_{};
  Fd listener_;
  Fd wake_;  // eventfd: stop
  std::atomic<bool> stop_{false};
  std::atomic<std::uint64_t> served_{0}, refused_{0};

  mutable std::mutex mu_;  // regions_, ring_, hello_ (and held across each device copy)
  std::map<std::uint64_t, Region> regions_;
  std::uint64_t next_id_ = 1;
  std::uint8_t* ring_ = nullptr;
  std::string hello_;  // the encoded Hello frame

  std::thread thread_;  // last: started when everything above is ready
};

}  // namespace tensorhub::transport::staged
