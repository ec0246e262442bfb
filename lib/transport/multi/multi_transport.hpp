// `multi` transport: every data path of this process at once (README "Data paths"). It holds
// backends in preference order (best first: same host, then same MPI job, then ucx) and
//  * endpoint()  lists each backend's endpoint (path_list.hpp), so a peer can use any path;
//  * expose()    exposes each range on every backend that can_expose() it (mpi_rma: its pool
//                only; ucx and same-host paths: any host memory) and returns one descriptor per
//                range listing (path, descriptor). Exposures are shared: exposing a range that
//                is still exposed (the same base, size and memory kind, e.g. a frozen tensor
//                published in two versions) reuses the registration, which ends with the last;
//  * post()      routes each read to the first backend, in this process's preference order,
//                that reaches the holder's endpoint for that path, has a descriptor of the
//                region on it and can write the destination (ReadOp::dst_memory: host-only
//                paths refuse device memory, so a device destination falls through to
//                device_ipc); no such path: TransportError saying what each side offers;
//  * can_read_into() whether post() would find such a path for (holder, region, memory kind);
//  * poll()/in_flight() merge the backends'.
// Endpoints and descriptors of a single backend (not path lists) are read by the first backend
// that reaches them. Like every Transport, used from one thread at a time.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "multi/path_list.hpp"
#include "tensorhub/transport/transport.hpp"

namespace tensorhub::transport {

namespace multi {
struct SharedRegion;
}

class MultiTransport final : public Transport {
 public:
  // `paths`: 1..kMaxPaths backends with distinct names, best first. Throws UserError otherwise.
  explicit MultiTransport(std::vector<std::unique_ptr<Transport>> paths);
  ~MultiTransport() override;
  MultiTransport(const MultiTransport&) = delete;
  MultiTransport& operator=(const MultiTransport&) = delete;

  // "mpi_rma+ucx": the paths, best first.
  std::string_view name() const override { return name_; }
  const std::string& endpoint() const override { return endpoint_; }
  bool reaches(std::string_view endpoint) const override;
  std::unique_ptr<Exposure> expose(std::span<const MemoryRange> ranges) override;
  bool can_expose(const MemoryRange& range) const override;
  bool can_read_into(std::string_view endpoint, std::string_view descriptor, MemoryKind dst) const override;
  // Whether the path post() would route a host read to first can scatter it (a scattered read is
  // never moved to another path: post() fails it instead, and the engine reads it again).
  bool can_scatter(std::string_view endpoint, std::string_view descriptor) const override;
  void post(const ReadOp& op) override;
  void poll(std::vector<Completion>& out) override;
  std::size_t in_flight() const override;
  // From the first backend with a registered pool (mpi_rma), else the first that allocates.
  void* allocate(std::uint64_t bytes) override;
  void deallocate(void* p) override;
  void close() override;
  bool job_barrier() override;

  std::size_t paths() const { return paths_.size(); }
  Transport& path(std::size_t i) { return *paths_.at(i); }

 private:
  struct Route {
    std::size_t path = 0;  // index into paths_
    std::string endpoint;  // the holder's endpoint on that path
  };
  struct Routes {
    std::vector<Route> usable;  // in this process's preference order
    std::string offered;        // the holder's paths, for errors
  };
  const Routes& routes_to(const std::string& endpoint) const;
  // The region's descriptor on `path` (`descriptor` itself when it is not a path list).
  // The path post() would route a read of `descriptor` at `endpoint` into `dst` memory to, with
  // the route's endpoint and the region's descriptor on that path; nullopt when there is none
  // (or the endpoint or descriptor does not parse).
  struct Chosen {
    const Transport* path = nullptr;
    std::string endpoint;
    std::string descriptor;
  };
  std::optional<Chosen> first_path(std::string_view endpoint, std::string_view descriptor, MemoryKind dst) const;
  static std::optional<std::string_view> region_on(const Transport& path, bool listed, std::string_view descriptor,
                                                   const multi::PathList& regions);
  std::string names() const;

  std::vector<std::unique_ptr<Transport>> paths_;
  std::string name_;
  std::string endpoint_;
  // Decoded holder endpoints (bounded: cleared when it reaches kMaxCachedPeers).
  mutable std::unordered_map<std::string, Routes> routes_;
  // Live exposures by (address, bytes, memory kind), shared by every Exposure of that range.
  std::mutex exposed_mu_;
  std::map<std::tuple<std::uintptr_t, std::uint64_t, int>, std::weak_ptr<multi::SharedRegion>> exposed_;
  std::unordered_map<void*, std::size_t> allocated_;  // allocate()d memory -> its path
};

}  // namespace tensorhub::transport
