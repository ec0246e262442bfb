#include "remote_key.hpp"

#include <string>

#include "status.hpp"

namespace tensorhub::transport::ucx {

RemoteKey::RemoteKey(ucp_ep_h ep, std::span<const std::byte> packed, std::string_view peer_name) {
  check(ucp_ep_rkey_unpack(ep, packed.data(), &rkey_), "ucp_ep_rkey_unpack", "peer " + std::string(peer_name));
}

RemoteKey::~RemoteKey() { ucp_rkey_destroy(rkey_); }

}  // namespace tensorhub::transport::ucx
