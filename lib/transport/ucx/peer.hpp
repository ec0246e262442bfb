// What a reader keeps per holder it reads from: the endpoint, the holder's unpacked remote keys,
// and whether the holder is dead (then every further read of it fails at once).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "endpoint.hpp"
#include "remote_key.hpp"

namespace tensorhub::transport::ucx {

struct Peer {
  explicit Peer(std::string peer_name) : name(std::move(peer_name)) {}
  Peer(const Peer&) = delete;
  Peer& operator=(const Peer&) = delete;

  bool dead() const { return !failure.empty(); }

  std::string name;                // the label in its endpoint, for messages ("host/pid")
  std::vector<std::byte> address;  // its worker address (validated): what its remote keys are bound to
  // Declared before `ep`: keys are destroyed after the endpoint is closed (a forced close first
  // cancels the requests that still use them).
  std::unordered_map<std::string, std::unique_ptr<RemoteKey>> rkeys;  // by packed key (base64url)
  std::unordered_map<std::string, std::uint64_t> key_hashes;          // by packed key, for am reads
  std::optional<Endpoint> ep;
  ucs_status_t ep_error = UCS_OK;  // set by the endpoint's error callback
  std::string failure;             // why the peer is dead; empty while it is alive
  // Reads from it are served by active messages (am_reads.hpp), not ucp_get_nbx: chosen once,
  // when its endpoint is created (UcxOptions::read, lanes.hpp).
  bool am = false;
  // When a read from this peer last completed: the deadline runs from max(post, this).
  std::chrono::steady_clock::time_point last_progress{};
};

}  // namespace tensorhub::transport::ucx
